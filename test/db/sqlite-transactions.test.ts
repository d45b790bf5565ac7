import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/audit/audit.service.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { createOrganization, getOrganization, setOrganizationPlan } from '../../src/orgs/org.service.js';
import { systemClock } from '../../src/shared/clock.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * Transactions on SQLite begin IMMEDIATE: the write lock is theirs from the start. With SQLite's
 * deferred BEGIN, a transaction that reads and then writes fails as "database is locked" whenever
 * another process (the CLI beside a server, or the server beside the CLI) commits in between,
 * however long the busy timeout: its snapshot is stale by then.
 */
describe('SQLite transactions and another process writing', () => {
  async function open() {
    const dir = mkdtempSync(join(tmpdir(), 'parley-trx-'));
    dirs.push(dir);
    const file = join(dir, 'parley.db');
    const database = await openDatabase({ kind: 'sqlite', file, busyTimeoutMs: 10_000 });
    await migrateToLatest(database.db);
    const org = await createOrganization(database.db, systemClock, { name: 'Acme', plan: 'paid' });
    return { database, org, file };
  }

  it('a transaction that reads, then writes, holds the write lock from its start: a write elsewhere meanwhile waits', async () => {
    const { database, org, file } = await open();
    // Another process's connection, which gives up at once rather than wait for a lock.
    const other = new SQLite(file, { timeout: 0 });
    try {
      let elsewhere = 'not tried';
      await inTransaction(database.db, async (trx) => {
        const before = await trx
          .selectFrom('organizations')
          .select('plan')
          .where('id', '=', org.id)
          .executeTakeFirstOrThrow();
        // Another process writes between this transaction's read and its write.
        try {
          other.prepare("UPDATE organizations SET default_country = 'FR' WHERE id = ?").run(org.id);
          elsewhere = 'committed';
        } catch (err) {
          elsewhere = (err as { code?: string }).code ?? String(err);
        }
        await trx
          .updateTable('organizations')
          .set({ plan: before.plan === 'paid' ? 'free' : 'paid' })
          .where('id', '=', org.id)
          .execute();
      });
      // The other write was refused (it would have waited, with a busy timeout); this one went in.
      expect(elsewhere).toBe('SQLITE_BUSY');
      expect(await getOrganization(database.db, org.id)).toMatchObject({ plan: 'free', defaultCountry: null });
      // Once the transaction is over, the other process writes as usual.
      other.prepare("UPDATE organizations SET default_country = 'FR' WHERE id = ?").run(org.id);
      expect(await getOrganization(database.db, org.id)).toMatchObject({ plan: 'free', defaultCountry: 'FR' });
    } finally {
      other.close();
      await database.close();
    }
  });

  it('a plan change started while another process holds the write lock waits for it, then goes in', async () => {
    const { database, org, file } = await open();
    // Another process takes the write lock, writes, says so, and commits 500 ms later.
    const child = spawn(
      process.execPath,
      [
        '-e',
        `const db = new (require('better-sqlite3'))(process.argv[1]);
         db.exec('BEGIN IMMEDIATE');
         db.prepare("UPDATE organizations SET default_country = 'DE'").run();
         process.stdout.write('locked\\n');
         setTimeout(() => { db.exec('COMMIT'); db.close(); }, 500);`,
        file,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
        child.on('exit', (code) => reject(new Error(`the other process exited (${code}) before taking the lock`)));
      });
      // Its read and its write in one transaction, begun while the other process holds the lock.
      const changed = await setOrganizationPlan(database.db, org.id, 'free');
      expect(changed).toMatchObject({ plan: 'free', defaultCountry: 'DE' });
    } finally {
      child.kill();
      await database.close();
    }
  });
});
