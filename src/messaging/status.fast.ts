/**
 * The hot statements of delivery statuses (the status webhooks and the send's pending statuses).
 * Each is declared with `precompiled()` (src/db/precompiled.ts): built and compiled once per
 * database; on SQLite a prepared statement run directly, whose writes join the group commit of
 * that event-loop turn; on PostgreSQL a named prepared statement (outside transactions). The
 * statements of a batch of statuses are written by hand for each database (`unnest` on
 * PostgreSQL, `json_each` on SQLite), here.
 */
import { type Kysely, type Selectable, sql } from 'kysely';
import { batchedOnPostgres, isPostgres, precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import type { StatusEvent } from './message.model.js';
import type { MessageStatusTable } from './messaging.tables.js';

export const messageByProviderId = precompiled((db) =>
  db.selectFrom('messages').select(['id', 'provider_message_id']).where('provider_message_id', '=', slot<string>(0)),
);

/** The same, scoped to the number the webhook names: a status never moves another number's message. */
export const messageByProviderIdOfNumber = precompiled((db) =>
  db
    .selectFrom('messages')
    .innerJoin('messaging_numbers', 'messaging_numbers.id', 'messages.number_id')
    .select(['messages.id', 'messages.provider_message_id'])
    .where('messages.provider_message_id', '=', slot<string>(0))
    .where('messaging_numbers.phone_number_id', '=', slot<string>(1)),
);

const insertStatusQuery = precompiled((db) =>
  db
    .insertInto('message_statuses')
    .values({
      message_id: slot(0),
      status: slot(1),
      occurred_at: slot(2),
      received_at: slot(3),
      error_code: slot(4),
      error_message: slot(5),
    })
    .onConflict((oc) => oc.columns(['message_id', 'status']).doNothing()),
);

/**
 * Records a status (once per message and status). Recording it moves the message: a trigger of
 * `message_statuses` (migration 0015-status-history) moves the message forward only (`failed`
 * bringing its error) and adds the status to its history, in the same statement, against the
 * message's row as it is when the update locks it, so concurrent webhooks cannot move it back or
 * lose each other's statuses. A status already recorded is not inserted, so it changes nothing.
 */
export async function applyStatus(db: Kysely<DB>, messageId: string, event: StatusEvent): Promise<void> {
  const row: MessageStatusTable = {
    message_id: messageId,
    status: event.status,
    occurred_at: event.occurredAt,
    received_at: event.receivedAt,
    error_code: event.errorCode,
    error_message: event.errorMessage,
  };
  await insertStatusQuery(db, [
    row.message_id,
    row.status,
    row.occurred_at,
    row.received_at,
    row.error_code,
    row.error_message,
  ]);
}

/** A message a status is about, with what its `message.status` event needs. */
export interface StatusTargetOfAgent {
  readonly id: string;
  readonly orgId: string;
  readonly agentId: string;
  readonly conversationId: string | null;
}

/**
 * The statements of a batch of statuses take their rows as arrays: on PostgreSQL one array per
 * column (`unnest`), on SQLite one JSON array of rows (`json_each`), both in the order given.
 */
const rowsParameter = (db: Kysely<DB>, columns: readonly (readonly unknown[])[]): unknown[] =>
  isPostgres(db) ? [...columns] : [JSON.stringify((columns[0] ?? []).map((_, i) => columns.map((c) => c[i])))];

/** `v.value`'s column `n` on SQLite. */
const at = (n: number) => sql.raw(`json_extract(v.value, '$[${n}]')`);

const lockMessagesByProviderIdQuery = precompiled<{
  i: string | number;
  id: string;
  org_id: string;
  agent_id: string;
  conversation_id: string | null;
}>((db) => ({
  compile: () =>
    (isPostgres(db)
      ? sql`select v.i, m.id, m.org_id, m.agent_id, m.conversation_id
          from unnest((select ${slot<string[]>(0)}::text[]), (select ${slot<(string | null)[]>(1)}::text[]))
            with ordinality as v(provider_message_id, phone_number_id, i)
          join messages m on m.provider_message_id = v.provider_message_id
          where v.phone_number_id is null or exists (
            select 1 from messaging_numbers n where n.id = m.number_id and n.phone_number_id = v.phone_number_id)
          order by m.id
          for update of m`
      : sql`select v.key + 1 as i, m.id, m.org_id, m.agent_id, m.conversation_id
          from json_each(${slot<string>(0)}) v
          join messages m on m.provider_message_id = ${at(0)}
          where ${at(1)} is null or exists (
            select 1 from messaging_numbers n where n.id = m.number_id and n.phone_number_id = ${at(1)})`
    ).compile(db),
}));

/**
 * In a transaction: the messages of many statuses by provider ID (scoped to the number a status
 * names, as `findMessageForStatus`), in one statement. On PostgreSQL each is locked, in the order
 * of their IDs, so that two transactions doing this for overlapping messages wait for each other
 * instead of deadlocking (SQLite has one writer at a time). Answers, in the order asked, each
 * status's message or undefined (not found by provider ID).
 */
export async function lockMessagesForStatuses(
  trx: Kysely<DB>,
  statuses: readonly { readonly providerMessageId: string; readonly phoneNumberId: string | undefined }[],
): Promise<(StatusTargetOfAgent | undefined)[]> {
  const { rows } = await lockMessagesByProviderIdQuery(
    trx,
    rowsParameter(trx, [statuses.map((s) => s.providerMessageId), statuses.map((s) => s.phoneNumberId ?? null)]),
  );
  const found: (StatusTargetOfAgent | undefined)[] = statuses.map(() => undefined);
  for (const row of rows) {
    found[Number(row.i) - 1] = {
      id: row.id,
      orgId: row.org_id,
      agentId: row.agent_id,
      conversationId: row.conversation_id,
    };
  }
  return found;
}

const STATUS_ARRAYS = sql`(select ${slot<string[]>(0)}::text[]), (select ${slot<string[]>(1)}::text[]),
  (select ${slot<number[]>(2)}::bigint[]), (select ${slot<number[]>(3)}::bigint[]),
  (select ${slot<(number | null)[]>(4)}::integer[]), (select ${slot<(string | null)[]>(5)}::text[])`;

const insertStatusesQuery = precompiled((db) => ({
  compile: () =>
    (isPostgres(db)
      ? sql`insert into message_statuses (message_id, status, occurred_at, received_at, error_code, error_message)
          select * from unnest(${STATUS_ARRAYS})
          on conflict (message_id, status) do nothing`
      : sql`insert into message_statuses (message_id, status, occurred_at, received_at, error_code, error_message)
          select ${at(0)}, ${at(1)}, ${at(2)}, ${at(3)}, ${at(4)}, ${at(5)} from json_each(${slot<string>(0)}) v where true
          on conflict (message_id, status) do nothing`
    ).compile(db),
}));

/**
 * `applyStatus` for many statuses in one statement, with the same outcome as applying them one
 * after the other in the order given: each (message, status) is recorded once (its first
 * occurrence), and each message moves to the highest status recorded if that is above its own
 * (`failed` bringing its error), its `updated_at` that status's receipt time (the trigger of
 * `message_statuses`; on PostgreSQL once per statement, one update for all the messages).
 */
export async function applyStatuses(
  db: Kysely<DB>,
  statuses: readonly { readonly messageId: string; readonly event: StatusEvent }[],
): Promise<void> {
  if (statuses.length === 0) return;
  const columns = [
    statuses.map((s) => s.messageId),
    statuses.map((s) => s.event.status),
    statuses.map((s) => s.event.occurredAt),
    statuses.map((s) => s.event.receivedAt),
    statuses.map((s) => s.event.errorCode),
    statuses.map((s) => s.event.errorMessage),
  ];
  await insertStatusesQuery(db, rowsParameter(db, columns));
}

const pendingQuery = precompiled((db) =>
  db.selectFrom('pending_statuses').selectAll().where('provider_message_id', '=', slot<string>(0)),
);

const pendingOfManyQuery = precompiled((db) =>
  db
    .selectFrom('pending_statuses')
    .selectAll()
    .where('provider_message_id', '=', sql<string>`any(${slot<string[]>(0)}::text[])`),
);

export type PendingRow = Selectable<DB['pending_statuses']>;

/** The pending statuses of a provider message ID (on PostgreSQL, one read for those of one turn of the event loop). */
export const pendingOf = batchedOnPostgres<string, PendingRow[]>(
  async (db, providerMessageId) => (await pendingQuery(db, [providerMessageId])).rows,
  async (db, ids) => {
    const rows = (await pendingOfManyQuery(db, [ids])).rows;
    return ids.map((id) => rows.filter((r) => r.provider_message_id === id));
  },
);
