import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, freePort, ROOT, runCli, type ServeProcess, startServe } from '../helpers/cli.js';
import { runToEnd } from '../helpers/run-to-end.js';

interface Demo {
  orgId: string;
  agents: { id: string; name: string }[];
  keys: { organization: string; agent: string; campaign: string };
  baseUrl: string;
}

/** The first `ts` block of the client's README: the example a reader copies first. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'packages/client/README.md'), 'utf8');
  const code = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!code) throw new Error('packages/client/README.md has no ts block');
  return code;
}

/**
 * The client README's example, run as written against a server made by `parley demo`, as a user
 * would: the keys and IDs from demo's --json in the environment the example reads. Only the
 * import is pointed at this checkout's build of the client (packages/client/dist, which the
 * suite's global setup makes), so that the test runs this repository's client, not another one's.
 * One dialect: the example exercises the client and the demo, not SQL.
 */
describe("the client README's example against `parley demo` (sqlite)", () => {
  let dataDir: string;
  let server: ServeProcess;
  let demo: Demo;
  let port: number;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-client-readme-'));
    port = await freePort();
    server = await startServe(['--port', String(port)], { PARLEY_DATA_DIR: dataDir });
    const made = await runCli(['demo', '--json'], { PARLEY_DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    expect(made.code, made.stderr).toBe(0);
    demo = made.json<Demo>();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs to the end and its calls reach the sandbox as written', async () => {
    const code = readmeExample();
    expect(code).toContain("from '@parley/client'");
    const file = join(dataDir, 'example.mts');
    writeFileSync(file, code.replace("'@parley/client'", JSON.stringify(join(ROOT, 'packages/client/dist/index.js'))));
    const agent = demo.agents.find((a) => a.name === 'Support')?.id ?? '';
    const run = await runToEnd(process.execPath, ['--import', 'tsx', file], {
      cwd: ROOT,
      env: childEnv({ PARLEY_URL: demo.baseUrl, ORG_KEY: demo.keys.organization, AGENT: agent }),
    });
    expect(run.code, run.stderr).toBe(0);
    const sent = /^sent (wamid\.\S+)$/m.exec(run.stdout)?.[1] ?? '';
    expect(sent, run.stdout).not.toBe('');
    expect(run.stdout).toMatch(/^started cnv_\S+$/m);
    expect(run.stdout).toMatch(/^eu_\S+ Ada Lovelace$/m);
    expect(run.stdout).toMatch(/^404 NOT_FOUND .+ [0-9a-f-]{36}$/m);

    // What was sent, read back: accepted by the sandbox (which checks the template's parameter counts).
    const message = await fetch(`${demo.baseUrl}/api/messages/${sent}`, {
      headers: { authorization: `Bearer ${demo.keys.organization}` },
    });
    expect(message.status).toBe(200);
    const body = (await message.json()) as { message: Record<string, unknown> };
    expect(body.message).toMatchObject({ convId: agent, to: '+14155550100', templateName: 'order_update' });
    expect(body.message.status).toMatch(/^(accepted|sent|delivered|read)$/);
  }, 90_000);
});
