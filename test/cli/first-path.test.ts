import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { freePort, runCli, type ServeProcess, startServe } from '../helpers/cli.js';
import { signInAs } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';

interface Demo {
  orgId: string;
  agents: { id: string; name: string }[];
  dashboard: { url: string; email: string; password: string };
  keys: { agent: string };
  hook?: { id: string; url: string; secret: string; warning?: string };
  baseUrl: string;
}

const REFUSED =
  /^parley: warning: The server will refuse to deliver events to 127\.0\.0\.1: it is a private, loopback or link-local address\. For a bot on this machine or your own network, restart the server with PARLEY_WEBHOOK_ALLOW_PRIVATE=true/;

/**
 * The first path cannot fail quietly: `demo` makes a way into the dashboard and records what it
 * made; `endpoint create` says at once when the running server will refuse the address, and the
 * refused delivery is a failed one with its reason; `sandbox inbound` says when no bot heard the
 * message, and `--wait-reply` why no answer came. (The answer itself: test/docs/first-hour.test.ts.)
 * One dialect: what is checked is the CLI's words and the records it reads, not SQL.
 */
describe('the first path (sqlite)', () => {
  let t: TestApp;
  let server: ServeProcess;
  let env: Record<string, string>;
  const cli = (...args: string[]) => runCli(args, env);

  beforeAll(async () => {
    // The test app only reads and serves the dashboard; the server process works the jobs.
    t = await createTestApp('sqlite', { workJobs: false });
    env = { ...t.env, LOG_LEVEL: 'warn' };
    server = await startServe(['--port', String(await freePort())], env);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await t?.close();
  });

  it('demo makes a dashboard owner (password shown once), prints the sign-in address, and its work is in the audit log as cli', async () => {
    const first = await cli('demo', '--json');
    expect(first.code, first.stderr).toBe(0);
    const demo = first.json<Demo>();
    expect(demo.dashboard).toEqual({
      url: `${demo.baseUrl}/dashboard/login`,
      email: expect.stringMatching(/^owner(-\d+)?@demo\.example$/),
      password: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/),
    });
    expect(demo.hook).toBeUndefined();
    const login = await fetch(demo.dashboard.url);
    expect(login.status).toBe(200);
    // The sandbox numbers' templates were read at once: sends know each one's category.
    const templates = await fetch(`${demo.baseUrl}/api/templates?agent=${demo.agents[0]?.id}`, {
      headers: { authorization: `Bearer ${demo.keys.agent}` },
    });
    expect(templates.status).toBe(200);
    const catalogue = (await templates.json()) as {
      data: { name: string; category: string }[];
      syncedAt: number | null;
    };
    expect(catalogue.syncedAt).toEqual(expect.any(Number));
    expect(catalogue.data).toContainEqual(expect.objectContaining({ name: 'spring_sale', category: 'MARKETING' }));

    // A second demo gets an owner of its own.
    const second = await cli('demo');
    expect(second.code, second.stderr).toBe(0);
    const email = /sign in as (\S+) with password (\S+) \(shown this once\)/.exec(second.stdout);
    expect(email?.[1]).toMatch(/^owner-\d+@demo\.example$/);
    expect(email?.[1]).not.toBe(demo.dashboard.email);
    expect(second.stdout).toMatch(/^Dashboard: http:\/\/127\.0\.0\.1:\d+\/dashboard\/login$/m);
    expect(second.stdout).toMatch(/^ {2}export PARLEY_URL=\S+ ORG=org_\S+ AGENT=agt_\S+ .*AGENT_KEY=prl_us_\S+/m);

    const browser = await signInAs(t.app, demo.dashboard.email, demo.dashboard.password);
    const audit = await browser.get('/dashboard/audit');
    expect(audit.statusCode).toBe(200);
    const rows = [...audit.body.matchAll(/<tr><td[^>]*>[^<]*<\/td><td>([^<]*)<\/td><td>([^<]*)<\/td>/g)].map(
      (m) => `${m[1]}: ${m[2]}`,
    );
    const cliRow = (what: string) => rows.filter((r) => r === `Command line (cli): ${what}`).length;
    expect(cliRow('Created API key'), rows.join('\n')).toBe(3);
    expect(cliRow('Created campaign')).toBe(1);
    expect(cliRow('Added person')).toBe(1);
  }, 120_000);

  it('demo --hook-url makes the Support hook, shows its secret once and warns when the server will refuse it; a bad URL makes nothing', async () => {
    const made = await cli('demo', '--hook-url', 'https://127.0.0.1:4999/', '--json');
    expect(made.code, made.stderr).toBe(0);
    const demo = made.json<Demo>();
    const support = demo.agents.find((a) => a.name === 'Support')?.id;
    expect(demo.hook).toMatchObject({
      id: expect.stringMatching(/^ep_/),
      url: 'https://127.0.0.1:4999/',
      secret: expect.stringMatching(/^whsec_/),
      warning: expect.stringContaining('PARLEY_WEBHOOK_ALLOW_PRIVATE=true'),
    });
    expect(made.stderr).toMatch(REFUSED);
    const hooks = (await cli('endpoint', 'list', '--org', demo.orgId, '--json')).json<{ agentId: string }[]>();
    expect(hooks).toEqual([expect.objectContaining({ agentId: support })]);

    const orgsBefore = (await cli('org', 'list', '--json')).json<unknown[]>().length;
    const bad = await cli('demo', '--hook-url', 'ftp://127.0.0.1/');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('must be http:// or https://');
    expect((await cli('org', 'list', '--json')).json<unknown[]>()).toHaveLength(orgsBefore);
  }, 120_000);

  it('endpoint create warns of a private address by the running server’s switch, not only its own environment', async () => {
    const org = await makeOrg(t.ctx);
    const create = (url: string, extra: Record<string, string> = {}) =>
      runCli(['endpoint', 'create', '--org', org.id, '--url', url, '--json'], { ...env, ...extra });
    const [loopback, localhost, global] = await Promise.all([
      create('https://127.0.0.1:4000/'),
      create('https://localhost:4000/'),
      create('https://8.8.8.8/hook'),
    ]);
    expect(loopback.code).toBe(0);
    expect(loopback.stderr).toMatch(REFUSED);
    expect(loopback.json<{ warning: string }>().warning).toMatch(/^The server will refuse/);
    expect(localhost.stderr).toMatch(/refuse to deliver events to localhost \((127\.0\.0\.1|::1)\)/);
    expect(global.stderr).toBe('');
    expect(global.json()).not.toHaveProperty('warning');

    // The running server says it refuses: the CLI's own switch does not hide the warning...
    const allowedHere = await create('https://127.0.0.1:4001/', { PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true' });
    expect(allowedHere.stderr).toMatch(REFUSED);
    // ...and a server that allows them (as it tells through the data folder) gets no warning.
    const switchFile = join(env.PARLEY_DATA_DIR ?? '', 'server-us.allow-private');
    writeFileSync(switchFile, 'true\n');
    try {
      const allowed = await create('http://127.0.0.1:4002/');
      expect(allowed.code).toBe(0);
      expect(allowed.stderr).toBe('');
    } finally {
      writeFileSync(switchFile, 'false\n');
    }
  }, 120_000);

  it('sandbox inbound says when no bot heard the message; --wait-reply fails with the refused delivery’s reason, shown as failed', async () => {
    const demo = (await cli('demo', '--json')).json<Demo>();
    const [support, sales] = demo.agents;
    const inbound = (agent: string, ...extra: string[]) =>
      cli('sandbox', 'inbound', '--agent', agent, '--from', '+14155550100', '--text', 'hello', ...extra);

    const unheard = await inbound(sales?.id ?? '');
    expect(unheard.code, unheard.stderr).toBe(0);
    expect(unheard.stdout).toMatch(/the 24-hour window is open \(conversation cnv_\S+\)\n/);
    expect(unheard.stdout).toContain(
      `no bot heard it: agent ${sales?.id} has no hook. Make one with \`npx parley endpoint create --org ${demo.orgId} --agent ${sales?.id} --url http://127.0.0.1:4000/\``,
    );
    const noAnswer = await inbound(sales?.id ?? '', '--wait-reply');
    expect(noAnswer.code).toBe(1);
    expect(noAnswer.stderr).toMatch(/but no answer can come: no bot heard it: agent agt_\S+ has no hook/);

    const hook = await cli(
      'endpoint',
      'create',
      '--org',
      demo.orgId,
      '--agent',
      support?.id ?? '',
      '--url',
      'https://127.0.0.1:4003/',
      '--json',
    );
    const hookId = hook.json<{ id: string }>().id;
    const refused = await inbound(support?.id ?? '', '--wait-reply', '--timeout', '60');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^parley: no bot was told of the message, so no answer can come: the delivery dlv_\S+ to https:\/\/127\.0\.0\.1:4003\/ failed: address refused: private network: 127\.0\.0\.1 is a private, loopback or link-local address; the server delivers there only when started with PARLEY_WEBHOOK_ALLOW_PRIVATE=true\n$/,
    );
    const deliveries = await cli('endpoint', 'deliveries', '--id', hookId, '--failed', '--json');
    expect(deliveries.json<{ type: string; status: string; attempts: number; lastError: string }[]>()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: 'message.received',
          status: 'failed',
          attempts: 1,
          lastError: expect.stringMatching(/^address refused: private network: /),
        }),
      ]),
    );
    const table = await cli('endpoint', 'deliveries', '--id', hookId);
    expect(table.stdout).toMatch(/message\.received\s+failed\s+1\s+-\s+address refused: private network/);
  }, 180_000);
});
