import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from './helpers/app.js';
import { makeOrg, makeTenant } from './helpers/factories.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** This process's environment without its database settings (the test app's are passed instead). */
function cleanEnv(): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(base)) if (/^(DATABASE_URL|PARLEY_|PORT$|LOG_LEVEL$)/.test(name)) delete base[name];
  return base;
}

/** Runs `parley` from source against the test app's database. */
function parley(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base = cleanEnv();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: { ...base, NODE_NO_WARNINGS: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
  });
}

describe.each(DIALECTS)('end users over real HTTP and the CLI (%s)', (dialect) => {
  let t: TestApp;
  let base: string;
  let dir: string;
  beforeAll(async () => {
    t = await createTestApp(dialect);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    dir = mkdtempSync(join(tmpdir(), 'parley-eu-import-'));
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('20 parallel creates of one email: exactly one 201, the rest 409 naming it', async () => {
    const { orgKey } = await makeTenant(t.ctx);
    const email = `race.${Date.now()}@example.com`;
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${base}/api/endusers`, {
          method: 'POST',
          headers: { ...orgKey.auth, 'content-type': 'application/json' },
          body: JSON.stringify({ origin: 'manual', name: `Racer ${i}`, email: i % 2 ? email.toUpperCase() : email }),
        }),
      ),
    );
    const bodies = await Promise.all(responses.map((r) => r.json() as Promise<Record<string, unknown>>));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    const winner = bodies[statuses.indexOf(201)];
    for (const [i, body] of bodies.entries()) {
      if (statuses[i] === 409) {
        expect(body).toEqual({
          error: expect.any(String),
          code: 'DUPLICATE_ENDUSER',
          field: 'email',
          existingId: winner?._id,
        });
      }
    }
  });

  it('parallel batches with overlapping phones: each phone stored once, every item accounted for', async () => {
    const { orgKey } = await makeTenant(t.ctx);
    const items = Array.from({ length: 50 }, (_, i) => ({ phone: `+1 212 555 ${String(1000 + i)}` }));
    const responses = await Promise.all(
      Array.from({ length: 4 }, () =>
        fetch(`${base}/api/endusers/batch`, {
          method: 'POST',
          headers: { ...orgKey.auth, 'content-type': 'application/json' },
          body: JSON.stringify({ origin: 'imported', endUsers: items }),
        }).then((r) => r.json() as Promise<{ created: number; failed: number; results: { code?: string }[] }>),
      ),
    );
    expect(responses.reduce((n, r) => n + r.created, 0)).toBe(50);
    for (const r of responses) {
      expect(r.created + r.failed).toBe(50);
      for (const item of r.results) if (item.code) expect(item.code).toBe('DUPLICATE_ENDUSER');
    }
  });

  it('parley endusers import: same rules, a summary and a CSV of rejected rows with reasons', async () => {
    const org = await makeOrg(t.ctx, 'paid', 'US');
    const { orgKey } = await makeTenant(t.ctx);
    void orgKey;
    const file = join(dir, `people-${dialect}.csv`);
    const lines = ['Name,Email,Phone,Tags,Ignored'];
    for (let i = 0; i < 2500; i++) lines.push(`Person ${i},p${i}@Example.com,,csv;bulk,x`);
    lines.push('"Quoted, Name",bad-email,,,');
    lines.push('Dup,P7@example.com,,,');
    lines.push('Local,,(415) 555-2671,,');
    lines.push('Nobody,,12,,');
    lines.push(',,,,');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const rejectsFile = join(dir, `rejects-${dialect}.csv`);
    const run = await parley(['endusers', 'import', file, '--org', org.id, '--rejects', rejectsFile, '--json'], t.env);
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout);
    expect(summary).toMatchObject({ rows: 2505, created: 2501, rejected: 4, rejectsFile });

    const rejects = parse(readFileSync(rejectsFile), { columns: true }) as Record<string, string>[];
    expect(rejects.map((r) => [r.line, r.code, r.field])).toEqual([
      ['2502', 'INVALID_BODY', 'email'],
      ['2503', 'DUPLICATE_ENDUSER', 'email'],
      ['2505', 'INVALID_BODY', 'phone'],
      ['2506', 'INVALID_BODY', ''],
    ]);
    expect(rejects[0]?.name).toBe('Quoted, Name');
    expect(rejects.every((r) => (r.reason ?? '').length > 0)).toBe(true);

    const stored = await t.ctx.db
      .selectFrom('end_users')
      .select(['origin', 'phone'])
      .where('org_id', '=', org.id)
      .where('name', '=', 'Local')
      .executeTakeFirst();
    expect(stored).toEqual({ origin: 'imported', phone: '+14155552671' });
    const tagged = await t.ctx.db
      .selectFrom('end_user_tags')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', org.id)
      .where('tag', '=', 'bulk')
      .executeTakeFirst();
    expect(Number(tagged?.n)).toBe(2500);

    // Importing again rejects every row as a duplicate, and creates nothing.
    const again = await parley(
      ['endusers', 'import', file, '--org', org.id, '--rejects', rejectsFile, '--json'],
      t.env,
    );
    expect(JSON.parse(again.stdout)).toMatchObject({ rows: 2505, created: 0, rejected: 2505 });

    const badOrigin = await parley(['endusers', 'import', file, '--org', org.id, '--origin', 'web'], t.env);
    expect(badOrigin.code).toBe(1);
    expect(badOrigin.stderr).toMatch(/--origin must be one of/);
    const missing = await parley(['endusers', 'import', join(dir, 'nope.csv'), '--org', org.id], t.env);
    expect(missing.code).toBe(1);
    const noOrg = await parley(['endusers', 'import', file, '--org', 'org_nope'], t.env);
    expect(noOrg.code).toBe(1);
  });

  // `script` (util-linux) runs the import on a pseudo-terminal, where the progress bar is drawn.
  it.runIf(dialect === 'sqlite' && existsSync('/usr/bin/script'))(
    'parley endusers import draws a progress bar on a terminal, then prints the summary',
    async () => {
      const org = await makeOrg(t.ctx, 'paid', 'US');
      const file = join(dir, 'tty.csv');
      const lines = ['name,email'];
      for (let i = 0; i < 3000; i++) lines.push(`Tty ${i},tty${i}@example.com`);
      writeFileSync(file, `${lines.join('\n')}\n`);
      const command = [
        process.execPath,
        '--import',
        'tsx',
        'src/cli/main.ts',
        'endusers',
        'import',
        file,
        '--org',
        org.id,
      ]
        .map((a) => `'${a}'`)
        .join(' ');
      const run = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
        const child = spawn('/usr/bin/script', ['-qec', command, '/dev/null'], {
          cwd: ROOT,
          env: { ...cleanEnv(), NODE_NO_WARNINGS: '1', ...t.env, COLUMNS: '160' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
        });
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, out }));
      });
      expect(run.code, run.out).toBe(0);
      expect(run.out).toMatch(/importing \[[^\]]+\] \d+% \| \d+ rows/);
      expect(run.out).toContain('100% | 3000 rows | 3000 created | 0 rejected');
      expect(run.out).toMatch(/3000 rows: 3000 created, 0 rejected/);
    },
  );
});
