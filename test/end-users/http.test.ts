import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse/sync';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { searchKey } from '../../src/end-users/normalize.js';
import { newId } from '../../src/shared/ids.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { CLI_ENTRY, runCli } from '../helpers/cli.js';
import { expectDocumentedResponse, fromFetch } from '../helpers/contract.js';
import { makeOrg, makeTenant } from '../helpers/factories.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** This process's environment without its database settings (the test app's are passed instead). */
function cleanEnv(): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(base)) if (/^(DATABASE_URL|PARLEY_|PORT$|LOG_LEVEL$)/.test(name)) delete base[name];
  return base;
}

/** Runs `parley` against the test app's database (in a thread; the terminal test below spawns it). */
function parley(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli(args, env);
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

  /** POST /api/endusers/batch over real HTTP, checked against the OpenAPI document. */
  const postBatch = async (auth: Record<string, string>, body: unknown) => {
    const res = await fromFetch(
      await fetch(`${base}/api/endusers/batch`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    );
    expectDocumentedResponse(t.app, 'POST', '/api/endusers/batch', res);
    return res;
  };

  it('8 parallel batches of the same 1,000 emails, each in its own order: all 200, each email created once', async () => {
    const { org, orgKey } = await makeTenant(t.ctx);
    const stamp = Date.now().toString(36);
    const emails = Array.from({ length: 1000 }, (_, i) => `shuffle.${i}.${stamp}@example.com`);
    const shuffled = () => {
      const out = [...emails];
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [out[i], out[j]] = [out[j] as string, out[i] as string];
      }
      return out;
    };
    const orders = [emails, [...emails].reverse(), ...Array.from({ length: 6 }, shuffled)];
    const responses = await Promise.all(
      orders.map((order) =>
        postBatch(orgKey.auth, { origin: 'imported', endUsers: order.map((email) => ({ email, name: 'Race' })) }),
      ),
    );
    const bodies = responses.map((r) => {
      expect(r.statusCode, r.body.slice(0, 300)).toBe(200);
      return r.json() as {
        created: number;
        failed: number;
        results: { status: string; code?: string; existingId?: string; endUser?: { _id: string; email: string } }[];
      };
    });
    expect(bodies.reduce((n, b) => n + b.created, 0)).toBe(1000);
    const winners = new Map<string, string>();
    for (const body of bodies) {
      expect(body.created + body.failed).toBe(1000);
      for (const r of body.results) {
        if (r.endUser) winners.set(r.endUser.email, r.endUser._id);
      }
    }
    expect(winners.size).toBe(1000);
    for (const [i, body] of bodies.entries()) {
      for (const [k, r] of body.results.entries()) {
        if (r.status === 'created') continue;
        expect(r).toMatchObject({ code: 'DUPLICATE_ENDUSER', existingId: winners.get(orders[i]?.[k] ?? '') });
      }
    }
    const stored = await t.ctx.db
      .selectFrom('end_users')
      .select(['id', 'email'])
      .where('org_id', '=', org.id)
      .execute();
    expect(stored).toHaveLength(1000);
    expect(new Map(stored.map((r) => [r.email, r.id]))).toEqual(winners);
  });

  // A real deadlock: a transaction of the test takes phone B, the batch takes phone A and waits for
  // B, then the test's transaction asks for A. PostgreSQL kills the batch (it waited first); the
  // batch is run again once the test commits, and finds both phones taken.
  it.runIf(dialect === 'postgres')(
    'a batch PostgreSQL kills as a deadlock victim is retried: 200 with each item accounted for',
    async () => {
      const { org, orgKey } = await makeTenant(t.ctx);
      const [phoneA, phoneB] = ['+12125550170', '+12125550171'];
      const deadlocks = async () =>
        Number(
          (
            await sql<{
              n: string;
            }>`select deadlocks as n from pg_stat_database where datname = current_database()`.execute(t.ctx.db)
          ).rows[0]?.n,
        );
      const before = await deadlocks();
      const row = (phone: string, name: string) => ({
        id: newId('eu'),
        org_id: org.id,
        name,
        name_search: searchKey(name),
        email: null,
        phone,
        tags: '[]',
        origin: 'manual' as const,
        channel_identifiers: '{}',
        consent: '{}',
        created_at: Date.now(),
        last_seen_at: null,
        updated_at: Date.now(),
      });
      const mineA = row(phoneA, 'Mine A');
      const mineB = row(phoneB, 'Mine B');
      let batch: Promise<Awaited<ReturnType<typeof postBatch>>> | undefined;
      await t.ctx.db.transaction().execute(async (trx) => {
        await trx.insertInto('end_users').values(mineB).execute();
        batch = postBatch(orgKey.auth, {
          origin: 'imported',
          endUsers: [
            { email: 'a.deadlock@example.com', phone: phoneA },
            { email: 'b.deadlock@example.com', phone: phoneB },
          ],
        });
        // Wait until the batch is blocked on phone B, holding phone A.
        for (let i = 0; i < 200; i++) {
          const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock' and query like 'insert into "end_users"%'`.execute(
            t.ctx.db,
          );
          if (Number(rows[0]?.n) > 0) break;
          await new Promise((r) => setTimeout(r, 10));
        }
        await trx.insertInto('end_users').values(mineA).execute();
      });
      const res = await batch;
      expect(res?.statusCode).toBe(200);
      expect(res?.json()).toEqual({
        created: 0,
        failed: 2,
        results: [
          {
            index: 0,
            status: 'failed',
            error: expect.any(String),
            code: 'DUPLICATE_ENDUSER',
            field: 'phone',
            existingId: mineA.id,
          },
          {
            index: 1,
            status: 'failed',
            error: expect.any(String),
            code: 'DUPLICATE_ENDUSER',
            field: 'phone',
            existingId: mineB.id,
          },
        ],
      });
      // The statistics are written a moment after the transaction ends.
      let after = before;
      for (let i = 0; i < 50 && after === before; i++) {
        await new Promise((r) => setTimeout(r, 100));
        after = await deadlocks();
      }
      expect(after - before).toBe(1);
      const stored = await t.ctx.db
        .selectFrom('end_users')
        .select(['id', 'phone'])
        .where('org_id', '=', org.id)
        .orderBy('phone')
        .execute();
      expect(stored).toEqual([
        { id: mineA.id, phone: phoneA },
        { id: mineB.id, phone: phoneB },
      ]);
    },
  );

  const countIn = async (orgId: string) =>
    Number(
      (
        await t.ctx.db
          .selectFrom('end_users')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('org_id', '=', orgId)
          .executeTakeFirst()
      )?.n,
    );
  const readRejects = (path: string) => parse(readFileSync(path), { columns: true }) as Record<string, string>[];
  const NO_STACK = /\n\s+at |Error:|unexpected error/;

  it('parley endusers import: same rules, a summary and a CSV of rejected rows with reasons', async () => {
    const org = await makeOrg(t.ctx, 'paid', 'US');
    const file = join(dir, `people-${dialect}.csv`);
    const lines = ['Name,Email,Phone,Tags,Ignored'];
    for (let i = 0; i < 2500; i++) lines.push(`Person ${i},p${i}@Example.com,,csv;bulk,x`);
    lines.push('"Quoted, Name",bad-email,,,');
    lines.push('Dup,P7@example.com,,,');
    lines.push('Local,,(415) 555-2671,,');
    lines.push('Nobody,,12,,');
    lines.push(',,,,');
    lines.push('Name Only,,,,');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const rejectsFile = join(dir, `rejects-${dialect}.csv`);
    const run = await parley(['endusers', 'import', file, '--org', org.id, '--rejects', rejectsFile, '--json'], t.env);
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout);
    expect(summary).toMatchObject({ rows: 2506, created: 2502, rejected: 4, rejectsFile });

    const rejects = readRejects(rejectsFile);
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

    // Importing again rejects every row with an email or phone as a duplicate (or as invalid, as
    // before); a row with only a name is created again, since a name is not unique.
    const again = await parley(
      ['endusers', 'import', file, '--org', org.id, '--rejects', rejectsFile, '--json'],
      t.env,
    );
    expect(JSON.parse(again.stdout)).toMatchObject({ rows: 2506, created: 1, rejected: 2505 });
    const nameOnly = await t.ctx.db
      .selectFrom('end_users')
      .select('id')
      .where('org_id', '=', org.id)
      .where('name', '=', 'Name Only')
      .execute();
    expect(nameOnly).toHaveLength(2);
    expect(await countIn(org.id)).toBe(2503);

    const badOrigin = await parley(['endusers', 'import', file, '--org', org.id, '--origin', 'web'], t.env);
    expect(badOrigin.code).toBe(1);
    expect(badOrigin.stderr).toMatch(/--origin must be one of/);
    const noOrg = await parley(['endusers', 'import', file, '--org', 'org_nope'], t.env);
    expect(noOrg.code).toBe(1);
    expect(noOrg.stderr).toBe('parley: unknown organization "org_nope"\n');
    expect(noOrg.stdout).toBe('');
  });

  it('import: rejects name the line a record starts on (quoted line breaks, CRLF, blank lines, BOM); a value is claimed only by a created row', async () => {
    const org = await makeOrg(t.ctx, 'paid', 'US');
    const storedEmail = `stored.${dialect}.${Date.now()}@example.com`;
    await t.ctx.db
      .insertInto('end_users')
      .values({
        id: newId('eu'),
        org_id: org.id,
        name: 'Stored',
        name_search: 'stored',
        email: storedEmail,
        phone: '+14155550190',
        tags: '[]',
        origin: 'manual',
        channel_identifiers: '{}',
        consent: '{}',
        created_at: 1,
        last_seen_at: null,
        updated_at: 1,
      })
      .execute();
    const file = join(dir, `lines-${dialect}.csv`);
    const rows = [
      'name,email,phone,tags', // 1
      `"Multi\r\nLine",${storedEmail},+1 415 555 0191,`, // 2-3: the email is stored
      '', // 4
      'Second,second@example.com,+1 415 555 0191,', // 5: created, the phone is free after all
      '"Three ""quoted""\r\nline\nname",,+1 415 555 0191,', // 6-8: line 5 has the phone
      '"Nul\u0000Name",nul@example.com,,', // 9
      'Bad,,12,', // 10
      '"Tail\r\n\r\nmore",tail@example.com,,', // 11-13: created
      'Last,,+1 415 555 0190,', // 14: the phone is stored
    ];
    writeFileSync(file, `\uFEFF${rows.join('\r\n')}\r\n`);
    const rejectsFile = join(dir, `lines-rejects-${dialect}.csv`);
    const run = await parley(['endusers', 'import', file, '--org', org.id, '--rejects', rejectsFile, '--json'], t.env);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ rows: 7, created: 2, rejected: 5 });
    expect(readRejects(rejectsFile).map((r) => [r.line, r.code, r.field, r.reason])).toEqual([
      ['2', 'DUPLICATE_ENDUSER', 'email', 'An end user with this email already exists.'],
      ['6', 'DUPLICATE_ENDUSER', 'phone', 'Line 5 has the same phone.'],
      ['9', 'INVALID_BODY', 'name', "Invalid item: 'name' must not contain a NUL character."],
      ['10', 'INVALID_BODY', 'phone', expect.stringMatching(/'phone' is not a valid phone number/)],
      ['14', 'DUPLICATE_ENDUSER', 'phone', 'An end user with this phone already exists.'],
    ]);
    const created = await t.ctx.db
      .selectFrom('end_users')
      .select(['name', 'email', 'phone'])
      .where('org_id', '=', org.id)
      .where('name', '!=', 'Stored')
      .orderBy('email')
      .execute();
    expect(created).toEqual([
      { name: 'Second', email: 'second@example.com', phone: '+14155550191' },
      { name: 'Tail\r\n\r\nmore', email: 'tail@example.com', phone: null },
    ]);
  });

  it('import: FILE and --rejects are checked before anything is imported; known failures are one line, no stack', async () => {
    const org = await makeOrg(t.ctx, 'paid', 'US');
    const file = join(dir, `checked-${dialect}.csv`);
    writeFileSync(file, 'name,email\nA,a.checked@example.com\nB,b.checked@example.com\n');
    const cases: [string[], string][] = [
      [[dir], `parley: cannot read ${dir}: it is not a regular file\n`],
      [[join(dir, 'nope.csv')], `parley: cannot read ${join(dir, 'nope.csv')}: no such file or directory\n`],
      [
        [file, '--rejects', join(dir, 'missing-dir', 'r.csv')],
        `parley: cannot write the rejects file ${join(dir, 'missing-dir', 'r.csv')}: no such file or directory\n`,
      ],
      [[file, '--rejects', dir], `parley: cannot write the rejects file ${dir}: it is not a regular file\n`],
    ];
    // All at once: each is refused before it imports anything.
    const runs = await Promise.all(
      cases.map(([args]) => parley(['endusers', 'import', ...args, '--org', org.id], t.env)),
    );
    for (const [i, [args, message]] of cases.entries()) {
      const run = runs[i] ?? { code: null, stdout: '', stderr: '' };
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr).toBe(message);
      expect(run.stdout).toBe('');
    }
    expect(await countIn(org.id)).toBe(0);
    expect(existsSync(join(dir, 'missing-dir'))).toBe(false);
  });

  it('import: a CSV error stops cleanly, naming the line; rows before it are imported, the summary and rejects say so', async () => {
    const org = await makeOrg(t.ctx, 'paid', 'US');
    const file = join(dir, `broken-${dialect}.csv`);
    const lines = ['name,email'];
    for (let i = 0; i < 1502; i++) lines.push(`Row ${i},row${i}.broken@example.com`);
    lines.push('', '"Unclosed,never@example.com'); // 1504 blank, 1505 unclosed
    for (let i = 0; i < 1000; i++) lines.push(`After ${i},after${i}.broken@example.com`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    const rejectsFile = join(dir, `broken-rejects-${dialect}.csv`);
    // A bad closing quote mid-file, without --json, into another organization: imported at the same
    // time as the first file (checked below).
    const other = await makeOrg(t.ctx, 'paid', 'US');
    const file2 = join(dir, `broken2-${dialect}.csv`);
    writeFileSync(file2, 'name,email\r\nA,a.b2@example.com\r\n"B"x,b.b2@example.com\r\nC,c.b2@example.com\r\n');
    const [run, run2] = await Promise.all([
      parley(['endusers', 'import', file, '--org', org.id, '--rejects', rejectsFile, '--json'], t.env),
      parley(['endusers', 'import', file2, '--org', other.id], t.env),
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `parley: ${file}: the CSV record starting at line 1505 cannot be read (Quote Not Closed`,
    );
    expect(run.stderr).toMatch(
      /1502 of the 1502 rows before it were created, nothing from line 1505 on was imported\n$/,
    );
    expect(run.stderr).not.toMatch(NO_STACK);
    expect(JSON.parse(run.stdout)).toMatchObject({
      rows: 1503,
      created: 1502,
      rejected: 1,
      rejectsFile,
      error: { line: 1505, message: expect.stringMatching(/^Quote Not Closed/) },
    });
    expect(readRejects(rejectsFile).map((r) => [r.line, r.code])).toEqual([['1505', 'INVALID_CSV']]);
    expect(await countIn(org.id)).toBe(1502);

    // The second file, without --json: the summary on stdout, the error on stderr.
    expect(run2.code).toBe(1);
    expect(run2.stdout).toMatch(
      /^2 rows: 1 created, 1 rejected \(\d+ ms\)\nrejected rows and reasons: .*broken2-\w+\.rejects\.csv\n$/,
    );
    expect(run2.stderr).toMatch(/the CSV record starting at line 3 cannot be read \(Invalid Closing Quote/);
    expect(run2.stderr).not.toMatch(NO_STACK);
    const names = await t.ctx.db.selectFrom('end_users').select('name').where('org_id', '=', other.id).execute();
    expect(names).toEqual([{ name: 'A' }]);
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
      const command = [process.execPath, ...CLI_ENTRY, 'endusers', 'import', file, '--org', org.id]
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
