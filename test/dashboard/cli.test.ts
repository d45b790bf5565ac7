import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/dashboard/password.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { CLI_ENTRY, childEnv, ROOT, runCli } from '../helpers/cli.js';
import { postLogin } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';

/** Runs the CLI with `input` on its standard input. */
function runWithStdin(args: string[], env: Record<string, string>, input: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI_ENTRY, ...args], { cwd: ROOT, env: childEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe.each(DIALECTS)('user and audit commands (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t.close();
  });

  it('creates, lists, re-passwords and removes people, and the audit log records it as cli', async () => {
    const org = await makeOrg(t.ctx, 'free');
    const created = await runWithStdin(
      [
        'user',
        'create',
        '--org',
        org.id,
        '--email',
        'Ada@Example.com',
        '--role',
        'owner',
        '--password-stdin',
        '--json',
      ],
      t.env,
      'first password 1\n',
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const user = JSON.parse(created.stdout) as { id: string; email: string; role: string };
    expect(Object.keys(user).sort()).toEqual(['email', 'id', 'role']);
    expect(user).toMatchObject({ email: 'ada@example.com', role: 'owner' });
    const row = await t.ctx.db.selectFrom('users').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow();
    // The suite's hash cost, 2^12 (test/helpers/app.ts); the default, 2^17, is test/dashboard/password-cost.test.ts's.
    expect(row.password_hash).toMatch(/^scrypt\$4096\$8\$1\$/);
    expect(row.password_hash).not.toContain('first password');
    expect(await verifyPassword('first password 1', row.password_hash)).toBe(true);
    expect((await postLogin(t.app, 'ada@example.com', 'first password 1')).statusCode).toBe(303);

    // The three refusals at once: none depends on another; the list below comes after them all.
    const [duplicate, badRole, short] = await Promise.all([
      runCli(
        [
          'user',
          'create',
          '--org',
          org.id,
          '--email',
          'ada@example.com',
          '--role',
          'member',
          '--password',
          'another one 1',
        ],
        t.env,
      ),
      runCli(
        [
          'user',
          'create',
          '--org',
          org.id,
          '--email',
          'x@example.com',
          '--role',
          'boss',
          '--password',
          'another one 1',
        ],
        t.env,
      ),
      runCli(
        ['user', 'create', '--org', org.id, '--email', 'x@example.com', '--role', 'admin', '--password', 'short'],
        t.env,
      ),
    ]);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain('already exists');
    expect(badRole.stderr).toContain('role must be owner, admin or member');
    expect(short.stderr).toContain('at least 10 characters');

    const list = await runCli(['user', 'list', '--org', org.id, '--json'], t.env);
    expect(list.json<{ email: string }[]>().map((u) => u.email)).toEqual(['ada@example.com']);

    const changed = await runCli(
      ['user', 'password', '--org', org.id, '--email', 'ada@example.com', '--password', 'second password 2'],
      t.env,
    );
    expect(changed.code).toBe(0);
    expect((await postLogin(t.app, 'ada@example.com', 'first password 1')).statusCode).toBe(401);
    expect((await postLogin(t.app, 'ada@example.com', 'second password 2')).statusCode).toBe(303);

    expect((await runCli(['org', 'plan', '--org', org.id, '--plan', 'paid'], t.env)).code).toBe(0);
    const key = await runCli(
      [
        'key',
        'create',
        '--org',
        org.id,
        '--label',
        'ci',
        '--scope',
        'organization',
        '--permissions',
        'channels',
        '--json',
      ],
      t.env,
    );
    const keyId = key.json<{ id: string }>().id;
    expect((await runCli(['key', 'revoke', '--org', org.id, '--id', keyId], t.env)).code).toBe(0);
    const removed = await runCli(['user', 'remove', '--org', org.id, '--id', user.id], t.env);
    expect(removed.code).toBe(0);
    expect((await postLogin(t.app, 'ada@example.com', 'second password 2')).statusCode).toBe(401);

    const [audit, text] = await Promise.all([
      runCli(['audit', 'list', '--org', org.id, '--json'], t.env),
      runCli(['audit', 'list', '--org', org.id], t.env),
    ]);
    const entries = audit.json<{ actor: string; action: string; targetId: string }[]>();
    expect(entries.map((e) => e.action)).toEqual([
      'user.removed',
      'key.revoked',
      'key.created',
      'plan.changed',
      'user.password_changed',
      'user.created',
    ]);
    expect(new Set(entries.map((e) => e.actor))).toEqual(new Set(['cli']));
    expect(entries[1]?.targetId).toBe(keyId);
    expect(JSON.stringify(entries)).not.toContain('password 2');
    expect(text.stdout).toMatch(/cli\s+key\.revoked\s+api_key key_/);
  }, 120_000);
});
