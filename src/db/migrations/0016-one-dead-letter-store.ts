import type { Kysely, Migration } from 'kysely';

/** The provider webhooks' queue of the job runner (`PROVIDER_WEBHOOK_QUEUE`, spelt here as stored). */
const QUEUE = 'provider-webhook';
/** The error a body acknowledged but never applied carries while it waits for the next start. */
const NEVER_APPLIED = 'acknowledged but not applied before an earlier version stopped; the next start applies it';
const BATCH = 200;

interface InboxRow {
  id: string;
  body: string;
  received_at: number | string;
  state: string;
  attempts: number | string;
  last_error: string | null;
  failed_at: number | string | null;
  phone_number_ids: string | null;
}

interface DeadLetterRow {
  id: string;
  queue: string;
  payload: string;
  attempts: number | string;
  last_error: string | null;
  failed_at: number | string;
}

/** What a `provider-webhook` job carries: the body as signed and when it was received. */
const payloadOf = (body: string, receivedAt: number) => JSON.stringify({ raw: body, receivedAt });

async function insertInBatches<R>(db: Kysely<unknown>, table: string, rows: readonly R[]): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) {
    // biome-ignore lint/suspicious/noExplicitAny: a migration writes tables the typed schema no longer has.
    await (db as Kysely<any>)
      .insertInto(table)
      .values(rows.slice(i, i + BATCH))
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }
}

/**
 * One dead-letter store. Provider webhook bodies whose work kept failing were kept in
 * `webhook_inbox` as `failed`, beside the job runner's dead letters; they become dead letters of
 * the `provider-webhook` queue, keeping their ID, body, time of receipt, attempts, error and time
 * of failure, so that `parley jobs replay` (or `parley webhooks retry`) applies them. Bodies with
 * an inbound message for an unknown phone number ID (`unrouted`) move to `webhook_unrouted`. A body
 * still `live` (acknowledged, then left by a version that kept its queue in memory) becomes a dead
 * letter never attempted (0 attempts), which the next start puts back on the queue. Then
 * `webhook_inbox` is dropped. `down` moves them all back.
 */
export const oneDeadLetterStore: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('webhook_unrouted')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('last_error', 'text', (c) => c.notNull())
      .addColumn('kept_at', 'bigint', (c) => c.notNull())
      .addColumn('phone_number_ids', 'text', (c) => c.notNull())
      .execute();

    // biome-ignore lint/suspicious/noExplicitAny: the table is no longer in the typed schema.
    const rows = (await (db as Kysely<any>)
      .selectFrom('webhook_inbox')
      .selectAll()
      .orderBy('received_at')
      .orderBy('id')
      .execute()) as InboxRow[];
    const dead: DeadLetterRow[] = [];
    const unrouted: Record<string, unknown>[] = [];
    for (const row of rows) {
      const receivedAt = Number(row.received_at);
      const keptAt = row.failed_at === null ? receivedAt : Number(row.failed_at);
      if (row.state === 'unrouted') {
        unrouted.push({
          id: row.id,
          body: row.body,
          received_at: receivedAt,
          attempts: Number(row.attempts),
          last_error: row.last_error ?? 'unknown number',
          kept_at: keptAt,
          phone_number_ids: row.phone_number_ids ?? ',,',
        });
      } else {
        const live = row.state !== 'failed';
        dead.push({
          id: row.id,
          queue: QUEUE,
          payload: payloadOf(row.body, receivedAt),
          attempts: live ? 0 : Math.max(1, Number(row.attempts)),
          last_error: live ? NEVER_APPLIED : row.last_error,
          failed_at: keptAt,
        });
      }
    }
    await insertInBatches(db, 'job_dead_letters', dead);
    await insertInBatches(db, 'webhook_unrouted', unrouted);
    await db.schema.dropTable('webhook_inbox').execute();
  },

  async down(db: Kysely<unknown>) {
    // As 0005 and 0006 left it.
    await db.schema
      .createTable('webhook_inbox')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull().defaultTo('live'))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('last_error', 'text')
      .addColumn('failed_at', 'bigint')
      .addColumn('phone_number_ids', 'text')
      .execute();
    await db.schema
      .createIndex('webhook_inbox_state_idx')
      .on('webhook_inbox')
      .columns(['state', 'received_at'])
      .execute();

    // biome-ignore lint/suspicious/noExplicitAny: tables outside the typed schema of this version.
    const any = db as Kysely<any>;
    const dead = (await any
      .selectFrom('job_dead_letters')
      .selectAll()
      .where('queue', '=', QUEUE)
      .execute()) as DeadLetterRow[];
    const back: InboxRow[] = [];
    for (const row of dead) {
      let body: unknown;
      let receivedAt: unknown;
      try {
        ({ raw: body, receivedAt } = JSON.parse(row.payload) as { raw?: unknown; receivedAt?: unknown });
      } catch {
        continue;
      }
      if (typeof body !== 'string') continue;
      const live = Number(row.attempts) === 0;
      back.push({
        id: row.id,
        body,
        received_at: Number(receivedAt ?? row.failed_at),
        state: live ? 'live' : 'failed',
        attempts: Number(row.attempts),
        last_error: live ? null : row.last_error,
        failed_at: live ? null : Number(row.failed_at),
        phone_number_ids: null,
      });
    }
    const unrouted: { [k: string]: unknown }[] = await any.selectFrom('webhook_unrouted').selectAll().execute();
    for (const row of unrouted) {
      back.push({
        id: String(row.id),
        body: String(row.body),
        received_at: Number(row.received_at),
        state: 'unrouted',
        attempts: Number(row.attempts),
        last_error: String(row.last_error),
        failed_at: Number(row.kept_at),
        phone_number_ids: String(row.phone_number_ids),
      });
    }
    await insertInBatches(db, 'webhook_inbox', back);
    const moved = back.filter((r) => r.state !== 'unrouted').map((r) => r.id);
    for (let i = 0; i < moved.length; i += BATCH) {
      await any
        .deleteFrom('job_dead_letters')
        .where('id', 'in', moved.slice(i, i + BATCH))
        .execute();
    }
    await db.schema.dropTable('webhook_unrouted').execute();
  },
};
