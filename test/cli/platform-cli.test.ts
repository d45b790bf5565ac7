/**
 * The real `parley` command, spawned as a child process on the test's database (SQLite file or
 * PostgreSQL schema), and a real `parley serve` on that same database.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropPostgresSchema } from '../../src/db/database.js';
import { migrations } from '../../src/db/migrations/index.js';
import { parseKey } from '../../src/keys/key-format.js';
import { createTestApp, DIALECTS, PG_URL, type TestApp } from '../helpers/app.js';
import { freePort, freePortRange, runCli, runCliProcess, startServe } from '../helpers/cli.js';

interface KeyRow {
  id: string;
  label: string;
  prefix: string;
  scope: string;
  agentId: string | null;
  campaignId: string | null;
  permissions: string[];
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

describe.each(DIALECTS)('parley CLI (%s)', (dialect) => {
  let t: TestApp;
  let env: Record<string, string>;
  const cli = (...args: string[]) => runCli(args, env);

  beforeAll(async () => {
    t = await createTestApp(dialect);
    env = { ...t.env, LOG_LEVEL: 'warn' };
  });
  afterAll(async () => {
    await t?.close();
  });

  it('org, agent, campaign and keys of each scope, listed as a table and as JSON', async () => {
    const org = await cli('org', 'create', '--name', 'Acme', '--plan', 'paid', '--json');
    expect(org.code, org.stderr).toBe(0);
    const orgId = org.json<{ id: string; plan: string }>().id;
    expect(orgId).toMatch(/^org_[0-9A-Za-z]{22}$/);
    expect(org.json<{ plan: string }>().plan).toBe('paid');

    const agent = await cli('agent', 'create', '--org', orgId, '--name', 'Support', '--json');
    expect(agent.code, agent.stderr).toBe(0);
    const agentId = agent.json<{ id: string }>().id;
    expect(agentId).toMatch(/^agt_/);

    const campaign = await cli(
      ...['campaign', 'create', '--org', orgId, '--name', 'Spring', '--agent', agentId],
      ...['--template', 'hello_world', '--language', 'en_US', '--json'],
    );
    expect(campaign.code, campaign.stderr).toBe(0);
    const campaignId = campaign.json<{ id: string }>().id;
    expect(campaignId).toMatch(/^cmp_/);

    // The four keys at once: none depends on another (without --json, the fourth is printed once
    // with a warning).
    const [orgKey, agentKey, campaignKey, plain] = await Promise.all([
      cli(
        ...['key', 'create', '--org', orgId, '--label', 'ci', '--scope', 'organization'],
        ...['--permissions', 'channels,triggers,endusers', '--json'],
      ),
      cli(
        ...['key', 'create', '--org', orgId, '--label', 'bot', '--scope', 'agent', '--agent', agentId],
        ...['--permissions', 'channels,triggers', '--json'],
      ),
      cli(
        ...['key', 'create', '--org', orgId, '--label', 'spring', '--scope', 'campaign'],
        ...['--campaign', campaignId, '--json'],
      ),
      cli(
        ...['key', 'create', '--org', orgId, '--label', 'plain', '--scope', 'organization'],
        '--permissions',
        'Channels,End-users',
      ),
    ]);
    expect(orgKey.code, orgKey.stderr).toBe(0);
    const created = orgKey.json<{ id: string; key: string; prefix: string }>();
    expect(created.id).toMatch(/^key_/);
    expect(parseKey(created.key)).toEqual({ ok: true, region: 'us' });
    expect(created.key.startsWith(created.prefix)).toBe(true);

    expect(agentKey.code, agentKey.stderr).toBe(0);
    expect(campaignKey.code, campaignKey.stderr).toBe(0);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toMatch(/prl_us_[0-9A-Za-z]{38}/);
    expect(plain.stdout).toMatch(/shown this once/);

    const [list, table] = await Promise.all([
      cli('key', 'list', '--org', orgId, '--json'),
      cli('key', 'list', '--org', orgId),
    ]);
    expect(list.code, list.stderr).toBe(0);
    const rows = list.json<KeyRow[]>();
    expect(rows).toHaveLength(4);
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(
        [
          'agentId',
          'campaignId',
          'createdAt',
          'id',
          'label',
          'lastUsedAt',
          'permissions',
          'prefix',
          'revokedAt',
          'scope',
        ].sort(),
      );
      expect(row.lastUsedAt).toBeNull();
      expect(row.revokedAt).toBeNull();
      expect(JSON.stringify(row)).not.toContain(created.key.slice(13));
    }
    expect(rows.find((r) => r.label === 'ci')).toMatchObject({
      scope: 'organization',
      agentId: null,
      permissions: ['triggers', 'channels', 'endusers'],
    });
    expect(rows.find((r) => r.label === 'bot')).toMatchObject({
      scope: 'agent',
      agentId,
      permissions: ['triggers', 'channels'],
    });
    expect(rows.find((r) => r.label === 'plain')?.permissions).toEqual(['channels', 'endusers']);
    expect(rows.find((r) => r.label === 'spring')).toMatchObject({
      scope: 'campaign',
      campaignId,
      permissions: ['campaigns'],
    });

    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/LABEL\s+PREFIX\s+SCOPE\s+AGENT\s+PERMISSIONS\s+CREATED\s+LAST USED/);
    expect(lines).toHaveLength(2 + 4);
    const ciLine = lines.find((l) => l.includes(' ci '));
    expect(ciLine).toMatch(/Whole organization/);
    expect(ciLine).toMatch(/Triggers, Channels, End-users/);
    expect(ciLine).toMatch(/Never/);
    expect(lines.find((l) => l.includes(' bot '))).toMatch(new RegExp(`Specific AI agent\\s+${agentId}`));
    expect(table.stdout).not.toContain(created.key);

    // Revoke, with the key shown as revoked afterwards; again is harmless and keeps the first time.
    const revoke = await cli('key', 'revoke', '--org', orgId, '--id', created.id, '--json');
    expect(revoke.code, revoke.stderr).toBe(0);
    const revokedAt = revoke.json<{ id: string; revokedAt: number }>().revokedAt;
    expect(revokedAt).toBeGreaterThan(0);
    const again = await cli('key', 'revoke', '--org', orgId, '--id', created.id, '--json');
    expect(again.json<{ revokedAt: number }>().revokedAt).toBe(revokedAt);
    const [afterList, afterTable] = await Promise.all([
      cli('key', 'list', '--org', orgId, '--json'),
      cli('key', 'list', '--org', orgId),
    ]);
    const after = afterList.json<KeyRow[]>();
    expect(after.find((r) => r.id === created.id)?.revokedAt).toBe(revokedAt);
    const revokedLine = afterTable.stdout.split('\n').find((l) => l.includes(created.id));
    expect(revokedLine).toMatch(/revoked \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ/);

    // Plan switch.
    const plan = await cli('org', 'plan', '--org', orgId, '--plan', 'free', '--json');
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.json()).toEqual({ id: orgId, plan: 'free' });
    const denied = await cli(
      ...['key', 'create', '--org', orgId, '--label', 'x', '--scope', 'organization'],
      '--permissions',
      'channels',
    );
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain('API access requires a paid plan');
    expect(denied.stdout).toBe('');
  }, 120_000);

  it('org list: every organization of the region, as a table and as JSON', async () => {
    const made = (await cli('org', 'create', '--name', 'Findable', '--plan', 'paid', '--json')).json<{ id: string }>();
    const list = await cli('org', 'list', '--json');
    expect(list.code, list.stderr).toBe(0);
    const orgs = list.json<{ id: string; name: string; plan: string }[]>();
    expect(orgs).toContainEqual(expect.objectContaining({ id: made.id, name: 'Findable', plan: 'paid' }));
    const table = await cli('org', 'list');
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+PLAN\s+COUNTRY\s+CREATED$/);
    expect(table.stdout).toContain(made.id);
  });

  it('org create defaults to free and prints a sentence without --json', async () => {
    const res = await cli('org', 'create', '--name', 'Plain');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^created organization org_\w+ \(Plain, free plan\)/);
  }, 60_000);

  it('migrate on an empty database applies and lists every migration, then none the second time', async () => {
    const fresh: Record<string, string> =
      dialect === 'postgres'
        ? { ...env, PARLEY_PG_SCHEMA: `t_mig_${Date.now().toString(36)}` }
        : { ...env, PARLEY_DATA_DIR: mkdtempSync(join(tmpdir(), 'parley-migrate-')) };
    try {
      // The real binary, as users run it (the other commands run in a thread: test/helpers/cli.ts).
      const first = await runCliProcess(['migrate', '--json'], fresh);
      expect(first.code, first.stderr).toBe(0);
      expect(first.json()).toEqual({ region: 'us', applied: Object.keys(migrations) });
      const again = await runCli(['migrate', '--json'], fresh);
      expect(again.json()).toEqual({ region: 'us', applied: [] });
      const text = await runCli(['migrate'], fresh);
      expect(text.stdout).toBe('region us: database is up to date (nothing to apply)\n');
    } finally {
      if (dialect === 'postgres' && PG_URL && fresh.PARLEY_PG_SCHEMA)
        await dropPostgresSchema(PG_URL, fresh.PARLEY_PG_SCHEMA);
      else if (fresh.PARLEY_DATA_DIR) rmSync(fresh.PARLEY_DATA_DIR, { recursive: true, force: true });
    }
  }, 60_000);

  it('demo --json: a paid organization, agents, and a working key of each kind', async () => {
    const res = await cli('demo', '--json');
    expect(res.code, res.stderr).toBe(0);
    const demo = res.json<{
      orgId: string;
      agents: { id: string }[];
      keys: { organization: string; agent: string; campaign: string };
      curl: string[];
    }>();
    expect(demo.agents.length).toBeGreaterThanOrEqual(2);
    for (const key of Object.values(demo.keys)) expect(parseKey(key)).toEqual({ ok: true, region: 'us' });
    expect(demo.curl.join('\n')).toContain('/api/health');
    const rows = (await cli('key', 'list', '--org', demo.orgId, '--json')).json<KeyRow[]>();
    expect(rows.map((r) => r.scope).sort()).toEqual(['agent', 'campaign', 'organization']);
    const ok = await t.app.inject({
      method: 'GET',
      url: '/api/endusers',
      headers: { authorization: `Bearer ${demo.keys.organization}` },
    });
    expect(ok.statusCode, ok.body).toBe(200);
    // The campaign sends from an agent, so its key is taken: the curl line's recipients are queued.
    const campaignLine = demo.curl.find((l) => l.includes('/webhook')) ?? '';
    const webhookUrl = /(\/api\/campaigns\/cmp_\w+\/webhook)$/.exec(campaignLine)?.[1] ?? '';
    const posted = await t.app.inject({
      method: 'POST',
      url: webhookUrl,
      headers: { authorization: `Bearer ${demo.keys.campaign}` },
      payload: { recipients: [{ to: '+14155550122' }] },
    });
    expect(posted.statusCode, posted.body).toBe(202);
    expect(posted.json()).toMatchObject({ success: true, accepted: 1 });
    const text = await cli('demo');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/shown this once/);
    expect(text.stdout).toMatch(/curl -s/);
  }, 60_000);

  it('a key revoked by the CLI fails with 401 on the very next request to the running server', async () => {
    const port = await freePort();
    const server = await startServe(['--port', String(port)], env);
    try {
      const base = server.ready.regions[0]?.url ?? '';
      expect(base).toBe(`http://127.0.0.1:${port}`);
      const org = (await cli('org', 'create', '--name', 'Live', '--plan', 'paid', '--json')).json<{ id: string }>().id;
      const key = (
        await cli(
          'key',
          'create',
          '--org',
          org,
          '--label',
          'live',
          '--scope',
          'organization',
          '--permissions',
          'endusers',
          '--json',
        )
      ).json<{ id: string; key: string }>();
      const call = () => fetch(`${base}/api/endusers`, { headers: { authorization: `Bearer ${key.key}` } });

      const before = await call();
      expect(before.status).toBe(200);
      // The first successful call is recorded at once: the CLI no longer says "Never".
      const [listedJson, listedTable] = await Promise.all([
        cli('key', 'list', '--org', org, '--json'),
        cli('key', 'list', '--org', org),
      ]);
      expect(listedJson.json<KeyRow[]>()[0]?.lastUsedAt).toEqual(expect.any(Number));
      expect(listedTable.stdout).not.toMatch(/Never/);

      const revoke = await cli('key', 'revoke', '--org', org, '--id', key.id);
      expect(revoke.code, revoke.stderr).toBe(0);
      const after = await call();
      expect(after.status).toBe(401);
      expect(await after.json()).toEqual({ error: 'This API key has been revoked.', code: 'UNAUTHORIZED' });

      // The plan switch by the CLI takes effect at once too.
      const key2 = (
        await cli(
          'key',
          'create',
          '--org',
          org,
          '--label',
          'live2',
          '--scope',
          'organization',
          '--permissions',
          'endusers',
          '--json',
        )
      ).json<{ key: string }>();
      await cli('org', 'plan', '--org', org, '--plan', 'free');
      const free = await fetch(`${base}/api/endusers`, { headers: { authorization: `Bearer ${key2.key}` } });
      expect(free.status).toBe(403);
      expect(await free.json()).toEqual({ error: 'API access requires a paid plan', code: 'FORBIDDEN' });
      await cli('org', 'plan', '--org', org, '--plan', 'paid');
      const paid = await fetch(`${base}/api/endusers`, { headers: { authorization: `Bearer ${key2.key}` } });
      expect(paid.status).toBe(200);
    } finally {
      const code = await server.stop('SIGTERM');
      expect(code).toBe(0);
    }
  }, 120_000);

  it('serve --regions us,eu,in,qa: four regions on N..N+3, each with its own data', async () => {
    const first = await freePortRange(4);
    const regionEnv: Record<string, string> = { ...env };
    const schemas: string[] = [];
    if (dialect === 'postgres' && env.PARLEY_PG_SCHEMA) {
      delete regionEnv.PARLEY_PG_SCHEMA;
      for (const r of ['us', 'eu', 'in', 'qa']) {
        const schema = `${env.PARLEY_PG_SCHEMA}_${r}`;
        schemas.push(schema);
        regionEnv[`PARLEY_PG_SCHEMA_${r.toUpperCase()}`] = schema;
      }
    }
    // Four databases migrated from empty before the ready line: more than one server's 30 s on a busy machine.
    const server = await startServe(['--regions', 'us,eu,in,qa', '--port', String(first)], regionEnv, 90_000);
    try {
      expect(server.ready.regions.map((r) => [r.region, r.url])).toEqual(
        ['us', 'eu', 'in', 'qa'].map((r, i) => [r, `http://127.0.0.1:${first + i}`]),
      );
      for (const [i, region] of ['us', 'eu', 'in', 'qa'].entries()) {
        const health = await fetch(`http://127.0.0.1:${first + i}/api/health`);
        expect(await health.json()).toMatchObject({ status: 'ok', region });
      }
      // An eu organization and key, made by the CLI in the eu database, work in eu only.
      const org = (
        await runCli(['org', 'create', '--name', 'EU', '--plan', 'paid', '--region', 'eu', '--json'], regionEnv)
      ).json<{ id: string }>().id;
      const made = await runCli(
        [
          ...['key', 'create', '--org', org, '--label', 'eu', '--scope', 'organization'],
          ...['--permissions', 'endusers', '--region', 'eu', '--json'],
        ],
        regionEnv,
      );
      const key = made.json<{ key: string }>().key;
      expect(key.startsWith('prl_eu_')).toBe(true);
      const headers = { authorization: `Bearer ${key}` };
      expect((await fetch(`http://127.0.0.1:${first + 1}/api/endusers`, { headers })).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${first}/api/endusers`, { headers })).status).toBe(401);
      const inUs = await runCli(['key', 'list', '--org', org, '--region', 'us'], regionEnv);
      expect(inUs.code).not.toBe(0);
      expect(inUs.stderr).toMatch(/unknown organization/);

      // `demo --region eu` prints curl lines for the running eu server, which answer 200.
      const demo = await runCli(['demo', '--region', 'eu', '--json'], regionEnv);
      const shown = demo.json<{
        baseUrl: string;
        keys: { organization: string };
        curl: string[];
        serverRunning: boolean;
      }>();
      expect(shown.baseUrl).toBe(`http://127.0.0.1:${first + 1}`);
      expect(shown.serverRunning).toBe(true);
      expect(shown).not.toHaveProperty('notes');
      expect(shown.curl[1]).toContain(`http://127.0.0.1:${first + 1}/api/endusers`);
      expect(shown.curl.join('\n')).toContain(`http://127.0.0.1:${first + 1}/api/channels/send`);
      expect(shown.curl.join('\n')).toContain(`http://127.0.0.1:${first + 1}/api/triggers/`);
      expect(shown.curl.join('\n')).not.toContain('127.0.0.1:3000');
      const demoCall = await fetch(`${shown.baseUrl}/api/endusers`, {
        headers: { authorization: `Bearer ${shown.keys.organization}` },
      });
      expect(demoCall.status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
      // Stopped: the address files are gone, so demo falls back to the configured address.
      const [after, words] = await Promise.all([
        runCli(['demo', '--region', 'eu', '--json'], regionEnv),
        runCli(['demo', '--region', 'eu'], regionEnv),
      ]);
      expect(after.json<{ baseUrl: string; serverRunning: boolean }>()).toMatchObject({
        baseUrl: 'http://127.0.0.1:3000',
        serverRunning: false,
      });
      // In words, for people: no server of the region answers, and how to start one.
      expect(words.stdout).toContain('No Parley server of region eu answers at http://127.0.0.1:3000');
      expect(words.stdout).toContain('npx parley serve --region eu');
      if (PG_URL) for (const s of schemas) await dropPostgresSchema(PG_URL, s);
    }
  }, 120_000);
});

/**
 * Argument parsing and the wording of refusals: the same code on either database (the lookups
 * behind "unknown organization" are the repositories the tests above run on both), so SQLite proves
 * the point.
 */
describe('parley CLI: arguments and refusals (sqlite)', () => {
  let t: TestApp;
  let env: Record<string, string>;
  const cli = (...args: string[]) => runCli(args, env);

  beforeAll(async () => {
    t = await createTestApp('sqlite');
    env = { ...t.env, LOG_LEVEL: 'warn' };
  });
  afterAll(async () => {
    await t?.close();
  });

  it('exits non-zero with a one-line message on bad input', async () => {
    const org = (await cli('org', 'create', '--name', 'Errors', '--plan', 'paid', '--json')).json<{ id: string }>().id;
    const agent = (await cli('agent', 'create', '--org', org, '--name', 'A', '--json')).json<{ id: string }>().id;
    const cases: [string[], RegExp][] = [
      [
        ['key', 'create', '--org', 'org_nope', '--label', 'x', '--scope', 'organization', '--permissions', 'channels'],
        /unknown organization "org_nope"/,
      ],
      [
        [
          'key',
          'create',
          '--org',
          org,
          '--label',
          'x',
          '--scope',
          'agent',
          '--agent',
          agent,
          '--permissions',
          'endusers',
        ],
        /agent-scoped key cannot hold End-users/,
      ],
      [
        [
          'key',
          'create',
          '--org',
          org,
          '--label',
          'x',
          '--scope',
          'agent',
          '--agent',
          'agt_nope',
          '--permissions',
          'channels',
        ],
        /unknown agent "agt_nope"/,
      ],
      [
        ['key', 'create', '--org', org, '--label', 'x', '--scope', 'team', '--permissions', 'channels'],
        /scope must be organization, agent or campaign/,
      ],
      [
        ['key', 'create', '--org', org, '--label', 'x', '--scope', 'organization', '--permissions', 'admin'],
        /unknown permission "admin"/,
      ],
      [['key', 'create', '--org', org, '--label', 'x', '--scope', 'organization'], /at least one permission/],
      [['key', 'revoke', '--org', org, '--id', 'key_nope'], /unknown key "key_nope"/],
      [['agent', 'create', '--org', 'org_nope', '--name', 'A'], /unknown organization/],
      [['agent', 'list', '--org', 'org_nope'], /^parley: unknown organization "org_nope"\n$/],
      [['key', 'list', '--org', 'org_nope'], /^parley: unknown organization "org_nope"\n$/],
      [['serve', '--data', '/etc/passwd', '--port', '1'], /^parley: data folder "\/etc\/passwd" is not a folder/],
      [['org', 'plan', '--org', org, '--plan', 'gold'], /plan must be one of free, paid/],
      [['org', 'create', '--name', 'X', '--region', 'mars'], /unknown region "mars"/],
      [['key', 'list'], /required option not specified: --org <id>/],
      [['key', 'frobnicate'], /unknown command|error/i],
    ];
    // A few at a time: each is a Node process, and the machine may have two cores.
    const results: Awaited<ReturnType<typeof cli>>[] = [];
    for (let i = 0; i < cases.length; i += 3) {
      results.push(...(await Promise.all(cases.slice(i, i + 3).map(([args]) => cli(...args, '--json')))));
    }
    results.forEach((res, i) => {
      const [args, message] = cases[i] ?? [[], /./];
      expect(res.code, `parley ${args.join(' ')}`).not.toBe(0);
      expect(res.stderr, `parley ${args.join(' ')}`).toMatch(message);
      expect(res.stderr).not.toMatch(/\n\s+at /); // no stack trace
    });
  }, 120_000);

  it('--version prints the software version; help marks required options and shows an example', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    // The real binary: commander ends the process itself for these.
    const [version, help] = await Promise.all([
      runCliProcess(['--version'], env),
      runCliProcess(['trigger', 'create', '--help'], env),
    ]);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toBe(pkg.version);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--org <id>\s+organization ID \(required\)/);
    const idLine = help.stdout.split('\n').find((l) => l.includes('--id <slug>')) ?? '';
    expect(idLine).toContain('trigger ID');
    expect(idLine).not.toContain('required');
    expect(help.stdout).toContain('Example:\n  $ npx parley trigger create --org org_...');
  });

  it('every missing required option is reported at once', async () => {
    const [res, campaign] = await Promise.all([
      runCliProcess(['trigger', 'create', '--org', 'org_x'], env),
      cli('campaign', 'create', '--org', 'org_x', '--name', 'Spring'),
    ]);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(
      'required options not specified: --agent <id>, --name <name>, --template <name>, --language <code>',
    );
    expect(campaign.code).not.toBe(0);
    expect(campaign.stderr).toContain(
      'required options not specified: --agent <id>, --template <name>, --language <code>',
    );
  });

  it('serve refuses a port in use and a bad region with a clear message', async () => {
    const port = await freePort();
    const first = await startServe(['--port', String(port)], env);
    try {
      const [clash, bad, badPort] = await Promise.all([
        runCli(['serve', '--port', String(port)], env),
        runCli(['serve', '--region', 'mars'], env),
        runCli(['serve', '--port', 'abc'], env),
      ]);
      expect(clash.code).not.toBe(0);
      expect(clash.stderr).toMatch(/already in use/);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toMatch(/unknown region "mars"/);
      expect(badPort.stderr).toMatch(/port must be a positive integer/);
    } finally {
      await first.stop();
    }
  }, 120_000);
});
