import { type Kysely, Migrator, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrationProvider } from '../../src/db/migrations/index.js';
import type { DB } from '../../src/db/schema.js';
import {
  applyStatus,
  applyStatuses,
  insertMessage,
  PROVIDER_STATUSES,
  type ProviderStatus,
  STATUS_RANK,
  type StatusEvent,
} from '../../src/messaging/index.js';
import { createTestApp, DIALECTS, PG_URL, type TestApp } from '../helpers/app.js';
import { makeSendingTenant, templateMessageRow } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

type Tenant = Awaited<ReturnType<typeof makeSendingTenant>>;

const event = (status: ProviderStatus, occurredAt: number, error?: string): StatusEvent => ({
  status,
  occurredAt,
  receivedAt: occurredAt + 1,
  errorCode: error ? 131026 : null,
  errorMessage: error ?? null,
});

async function storeMessage(t: TestApp, tenant: Tenant, providerMessageId: string): Promise<string> {
  const row = templateMessageRow({
    orgId: tenant.org.id,
    agentId: tenant.agent.id,
    numberId: tenant.number.id,
    providerMessageId,
    at: 1000,
  });
  await insertMessage(t.ctx.db, row);
  return row.id;
}

type Entry = {
  status: string;
  occurred_at: number;
  received_at: number;
  error_code: number | null;
  error_message: string | null;
};
const byStatus = (a: Entry, b: Entry) => (a.status < b.status ? -1 : a.status > b.status ? 1 : 0);

/** The message's `status_history`, parsed, in status order. */
async function historyOf(db: Kysely<DB>, id: string): Promise<Entry[]> {
  const row = await db.selectFrom('messages').select('status_history').where('id', '=', id).executeTakeFirstOrThrow();
  const raw = row.status_history as unknown;
  const list = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Entry[];
  return list
    .map((e) => ({ ...e, occurred_at: Number(e.occurred_at), received_at: Number(e.received_at) }))
    .sort(byStatus);
}

/** The rows of `message_statuses` of the message, in status order. */
async function recordedOf(db: Kysely<DB>, id: string): Promise<Entry[]> {
  const rows = await db
    .selectFrom('message_statuses')
    .select(['status', 'occurred_at', 'received_at', 'error_code', 'error_message'])
    .where('message_id', '=', id)
    .execute();
  return rows
    .map((r) => ({ ...r, occurred_at: Number(r.occurred_at), received_at: Number(r.received_at) }))
    .sort(byStatus);
}

/** The message's history equals its recorded statuses, and is `expected` (status: occurred at). */
async function expectHistory(db: Kysely<DB>, id: string, expected: Record<string, number>): Promise<void> {
  const history = await historyOf(db, id);
  expect(history).toEqual(await recordedOf(db, id));
  expect(Object.fromEntries(history.map((e) => [e.status, e.occurred_at]))).toEqual(expected);
  expect(history.length).toBe(Object.keys(expected).length);
}

async function messageRow(db: Kysely<DB>, id: string) {
  return db
    .selectFrom('messages')
    .select(['status', 'updated_at', 'error_code', 'error_message'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

describe.each(DIALECTS)('a message keeps its status history on its row (%s)', (dialect) => {
  let t: TestApp;
  let tenant: Tenant;
  beforeEach(async () => {
    t = await createTestApp(dialect);
    tenant = await makeSendingTenant(t.ctx);
  });
  afterEach(async () => {
    await t.close();
  });

  it('records each status once, in the row and in message_statuses alike, whatever order they come in', async () => {
    const db = t.ctx.db;
    const id = await storeMessage(t, tenant, 'wamid.HIST1');
    // One batch: a status given twice keeps its first occurrence; the message moves to the highest.
    await applyStatuses(db, [
      { messageId: id, event: event('delivered', 6000) },
      { messageId: id, event: event('sent', 5000) },
      { messageId: id, event: event('delivered', 7000) },
    ]);
    await expectHistory(db, id, { sent: 5000, delivered: 6000 });
    expect(await messageRow(db, id)).toMatchObject({ status: 'delivered', updated_at: 6001 });

    await applyStatus(db, id, event('read', 8000));
    await expectHistory(db, id, { sent: 5000, delivered: 6000, read: 8000 });
    // A status already recorded changes nothing, not even the time of the last change.
    await applyStatus(db, id, event('sent', 9000));
    await expectHistory(db, id, { sent: 5000, delivered: 6000, read: 8000 });
    expect(await messageRow(db, id)).toMatchObject({ status: 'read', updated_at: 8001 });

    await applyStatus(db, id, event('failed', 10_000, 'Message undeliverable'));
    await expectHistory(db, id, { sent: 5000, delivered: 6000, read: 8000, failed: 10_000 });
    const failed = await historyOf(db, id);
    expect(failed.find((e) => e.status === 'failed')).toMatchObject({
      error_code: 131026,
      error_message: 'Message undeliverable',
    });
    expect(await messageRow(db, id)).toEqual({
      status: 'failed',
      updated_at: 10_001,
      error_code: 131026,
      error_message: 'Message undeliverable',
    });
  });

  it('moves a message through the provider statuses to the ranks the code gives them', async () => {
    const db = t.ctx.db;
    const id = await storeMessage(t, tenant, 'wamid.RANKS');
    for (const [i, status] of PROVIDER_STATUSES.entries()) {
      await applyStatus(db, id, event(status, 5000 + i));
      const row = await db
        .selectFrom('messages')
        .select(['status', 'status_rank'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ status, status_rank: STATUS_RANK[status] });
    }
  });

  it('adds a status that comes after a higher one to the history without moving the message back', async () => {
    const db = t.ctx.db;
    const id = await storeMessage(t, tenant, 'wamid.HIST2');
    await applyStatus(db, id, event('read', 8000));
    await applyStatus(db, id, event('delivered', 6000));
    await applyStatuses(db, [{ messageId: id, event: event('sent', 5000) }]);
    await expectHistory(db, id, { sent: 5000, delivered: 6000, read: 8000 });
    expect(await messageRow(db, id)).toMatchObject({ status: 'read', updated_at: 8001 });

    const res = await t.app.inject({
      method: 'GET',
      url: '/api/messages/wamid.HIST2',
      headers: tenant.orgKey.auth,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().message.status).toBe('read');
    expect(res.json().message.statuses).toEqual([
      { status: 'sent', timestamp: 5000, receivedAt: 5001 },
      { status: 'delivered', timestamp: 6000, receivedAt: 6001 },
      { status: 'read', timestamp: 8000, receivedAt: 8001 },
    ]);
  });

  it('a batch over several messages gives each only its own statuses', async () => {
    const db = t.ctx.db;
    const a = await storeMessage(t, tenant, 'wamid.HIST3A');
    const b = await storeMessage(t, tenant, 'wamid.HIST3B');
    const c = await storeMessage(t, tenant, 'wamid.HIST3C');
    await applyStatus(db, c, event('sent', 4000));
    await applyStatuses(db, [
      { messageId: a, event: event('sent', 5000) },
      { messageId: b, event: event('sent', 5100) },
      { messageId: a, event: event('delivered', 6000) },
      { messageId: c, event: event('sent', 4500) },
    ]);
    await expectHistory(db, a, { sent: 5000, delivered: 6000 });
    await expectHistory(db, b, { sent: 5100 });
    await expectHistory(db, c, { sent: 4000 });
    expect((await messageRow(db, a)).status).toBe('delivered');
    // c's second sent was no news: c is as the first left it.
    expect((await messageRow(db, c)).updated_at).toBe(4001);
  });

  it('a status written straight into message_statuses, as the version before writes it, is in the history', async () => {
    const db = t.ctx.db;
    const id = await storeMessage(t, tenant, 'wamid.RAW1');
    await applyStatus(db, id, event('sent', 5000));
    await sql`insert into message_statuses (message_id, status, occurred_at, received_at, error_code, error_message)
      values (${id}, 'delivered', 6000, 6001, null, null), (${id}, 'read', 7000, 7001, null, null)
      on conflict (message_id, status) do nothing`.execute(db);
    // The same again adds nothing.
    await sql`insert into message_statuses (message_id, status, occurred_at, received_at, error_code, error_message)
      values (${id}, 'read', 7500, 7501, null, null) on conflict (message_id, status) do nothing`.execute(db);
    await expectHistory(db, id, { sent: 5000, delivered: 6000, read: 7000 });
  });

  it('messages stored before the history column get theirs when the database is migrated, and are moved to their highest status', async () => {
    const db = t.ctx.db;
    const schema =
      dialect === 'postgres'
        ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
        : undefined;
    const migrator = new Migrator({
      db,
      provider: migrationProvider,
      ...(schema ? { migrationTableSchema: schema } : {}),
    });
    const withStatuses = await storeMessage(t, tenant, 'wamid.OLD1');
    const without = await storeMessage(t, tenant, 'wamid.OLD2');
    await applyStatus(db, withStatuses, event('sent', 5000));

    const down = await migrator.migrateTo('0014-sender-epoch');
    expect(down.error).toBeUndefined();
    expect(down.results?.map((r) => [r.migrationName, r.direction]).at(-1)).toEqual(['0015-status-history', 'Down']);
    // What the version before wrote: statuses in message_statuses alone, here without the update
    // of the message that followed them (a process stopped in between).
    await sql`insert into message_statuses (message_id, status, occurred_at, received_at, error_code, error_message)
      values (${withStatuses}, 'delivered', 6000, 6001, null, null), (${withStatuses}, 'failed', 7000, 7001, 131026, 'Gone')`.execute(
      db,
    );

    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
    await expectHistory(db, withStatuses, { sent: 5000, delivered: 6000, failed: 7000 });
    await expectHistory(db, without, {});
    // Those statuses never moved the message (the version before moved it in a statement of its
    // own): the migration moves it to the highest.
    expect(await messageRow(db, withStatuses)).toEqual({
      status: 'failed',
      updated_at: 7001,
      error_code: 131026,
      error_message: 'Gone',
    });
    expect(await messageRow(db, without)).toMatchObject({ status: 'accepted', updated_at: 1000 });
    const res = await t.app.inject({ method: 'GET', url: '/api/messages/wamid.OLD1', headers: tenant.orgKey.auth });
    expect(res.statusCode).toBe(200);
    expect(res.json().message.statuses).toEqual([
      { status: 'sent', timestamp: 5000, receivedAt: 5001 },
      { status: 'delivered', timestamp: 6000, receivedAt: 6001 },
      { status: 'failed', timestamp: 7000, receivedAt: 7001, error: { code: 131026, message: 'Gone' } },
    ]);
    const empty = await t.app.inject({ method: 'GET', url: '/api/messages/wamid.OLD2', headers: tenant.orgKey.auth });
    expect(empty.json().message.statuses).toEqual([]);
  });
});

describe.skipIf(!PG_URL)('status history under concurrent writers (postgres)', () => {
  it('a status applied while another transaction holds the message adds to what that one committed', async () => {
    const t = await createTestApp('postgres');
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const db = t.ctx.db;
      const id = await storeMessage(t, tenant, 'wamid.RACE1');
      let later: Promise<unknown>[] = [];
      await db.transaction().execute(async (trx) => {
        await applyStatus(trx, id, event('sent', 5000));
        // Two more writers, each its own statement: a new status, and the same status again.
        later = [applyStatus(db, id, event('delivered', 6000)), applyStatus(db, id, event('sent', 5500))];
        // Both wait for this transaction: the new status on the message's row, the repeated one on
        // the status's key.
        await until(async () => {
          const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
            where pg_backend_pid() = any(pg_blocking_pids(pid))`.execute(trx);
          return rows[0]?.n === 2;
        }, 'both writers to wait for the open transaction');
      });
      await Promise.all(later);
      await expectHistory(db, id, { sent: 5000, delivered: 6000 });
      expect(await messageRow(db, id)).toMatchObject({ status: 'delivered', updated_at: 6001 });
    } finally {
      await t.close();
    }
  });
});
