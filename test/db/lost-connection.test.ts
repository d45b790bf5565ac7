import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_URL, type TestApp } from '../helpers/app.js';
import { createQuietTestApp } from '../helpers/messaging.js';

/**
 * PostgreSQL only (SQLite has no connection to lose): a statement whose backend is terminated
 * under it (`pg_terminate_backend`, a restart, a failover) fails, and the connection it ran on is
 * not handed to the next statement. node-postgres reads the server's "terminating connection"
 * before it sees the socket close, so a connection given back at once would still look usable.
 */
describe.skipIf(!PG_URL)('a connection lost under a statement (postgres)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createQuietTestApp('postgres');
  });
  afterAll(async () => {
    await t.close();
  });

  const terminateUnder = (db: TestApp['ctx']['db']) =>
    sql`select pg_terminate_backend(pg_backend_pid()), pg_sleep(10)`.execute(db);

  it('runs the next statement on a live connection', async () => {
    for (let i = 0; i < 3; i++) {
      await expect(terminateUnder(t.ctx.db)).rejects.toMatchObject({ code: '57P01' });
      const next = await sql<{ one: number }>`select 1 as one`.execute(t.ctx.db);
      expect(next.rows).toEqual([{ one: 1 }]);
    }
  });

  it('runs the next statement on a live connection after a transaction lost its own', async () => {
    await expect(
      t.ctx.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        await terminateUnder(trx);
      }),
    ).rejects.toMatchObject({ code: '57P01' });
    const next = await sql<{ one: number }>`select 1 as one`.execute(t.ctx.db);
    expect(next.rows).toEqual([{ one: 1 }]);
  });
});
