/**
 * The hot statements of messages: the send's writes and window read, and the reads of
 * `GET /api/messages/<id>`. Each is declared with `precompiled()` (src/db/precompiled.ts): built and
 * compiled once per database; on SQLite a prepared statement run directly, whose writes join the
 * group commit of that event-loop turn; on PostgreSQL a named prepared statement (outside
 * transactions). The PostgreSQL-only SQL of the batched reads (`unnest`) is written here too.
 */
import { type Kysely, sql } from 'kysely';
import { batchedReads, precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import {
  MESSAGE_COLUMNS,
  MESSAGE_READ_COLUMNS,
  type MessageRead,
  STATUS_RANK,
  type StatusRow,
  WINDOW_MS,
} from './message.model.js';
import type { MessageTable } from './messaging.tables.js';

const insertMessageQuery = precompiled((db) =>
  db
    .insertInto('messages')
    .values(Object.fromEntries(MESSAGE_COLUMNS.map((c, i) => [c, slot(i)])) as unknown as MessageTable),
);

export async function insertMessage(db: Kysely<DB>, row: MessageTable): Promise<void> {
  await insertMessageQuery(
    db,
    MESSAGE_COLUMNS.map((c) => row[c]),
  );
}

const markAcceptedQuery = precompiled((db) =>
  db
    .updateTable('messages')
    .set({
      provider_message_id: slot<string>(0),
      status: sql<string>`case when status_rank < ${STATUS_RANK.accepted} then 'accepted' else status end`,
      status_rank: sql<number>`case when status_rank < ${STATUS_RANK.accepted} then ${STATUS_RANK.accepted} else status_rank end`,
      updated_at: slot<number>(1),
    })
    .where('id', '=', slot<string>(2)),
);

/** Records the provider's ID; the status becomes `accepted` unless a webhook already moved it on. */
export async function markAccepted(db: Kysely<DB>, id: string, providerMessageId: string, at: number): Promise<void> {
  await markAcceptedQuery(db, [providerMessageId, at, id]);
}

const windowQuery = precompiled((db) =>
  db
    .selectFrom('messaging_windows')
    .select('last_inbound_at')
    .where('number_id', '=', slot<string>(0))
    .where('user_phone', '=', slot<string>(1)),
);

/** `userKey` is `windowKey()` of the user's phone. */
export async function isWindowOpen(db: Kysely<DB>, numberId: string, userKey: string, now: number): Promise<boolean> {
  const row = (await windowQuery(db, [numberId, userKey])).rows[0];
  return row !== undefined && now - Number(row.last_inbound_at) <= WINDOW_MS;
}

type FoundMessage = { message: MessageRead; statuses: StatusRow[] };

const plainMessageQuery = (column: 'id' | 'provider_message_id') =>
  precompiled((db) =>
    db
      .selectFrom('messages')
      .select(MESSAGE_READ_COLUMNS)
      .select('status_history as statuses')
      .where(column, '=', slot<string>(0))
      .where('org_id', '=', slot<string>(1)),
  );
const plainMessageById = plainMessageQuery('id');
const plainMessageByProviderMessageId = plainMessageQuery('provider_message_id');

/** The history as stored: parsed jsonb on PostgreSQL, JSON text on SQLite. */
const historyOf = (statuses: unknown): StatusRow[] =>
  (typeof statuses === 'string' ? JSON.parse(statuses) : statuses) as StatusRow[];

/** A message by our ID (`msg_...`) or the provider's, with its statuses. */
export async function findMessage(
  db: Kysely<DB>,
  orgId: string,
  idOrProviderId: string,
): Promise<FoundMessage | undefined> {
  const query = idOrProviderId.startsWith('msg_') ? plainMessageById : plainMessageByProviderMessageId;
  const row = (await query(db, [idOrProviderId, orgId])).rows[0];
  if (!row) return undefined;
  const { statuses, ...message } = row;
  return { message, statuses: historyOf(statuses) };
}

// The key-epoch read of `GET /api/messages/<id>`, for a request whose cached key awaits the
// epoch (see confirmKeyEpoch): the message and the epoch in one snapshot.

/**
 * A message of an organization (by our ID or the provider's) with its status history, and the key
 * epoch, in one statement: always one row, the epoch's. The history is the row's own
 * `status_history` (parsed jsonb on PostgreSQL, text on SQLite).
 */
const messageQuery = (column: 'id' | 'provider_message_id') =>
  precompiled((db) =>
    db
      .selectFrom('key_epoch')
      .leftJoin('messages', (join) =>
        (column === 'id'
          ? join.on('messages.id', '=', slot<string>(0))
          : join.on('messages.provider_message_id', '=', slot<string>(0))
        ).on('messages.org_id', '=', slot<string>(1)),
      )
      .select(MESSAGE_READ_COLUMNS.map((c) => `messages.${c}` as const))
      .select(['key_epoch.epoch as key_epoch', 'messages.status_history as statuses'])
      .where('key_epoch.id', '=', 1),
  );
const messageById = messageQuery('id');
const messageByProviderMessageId = messageQuery('provider_message_id');

type MessageWithKeyEpoch = { found: FoundMessage | undefined; epoch: number };

function splitMessageRow(row: Record<string, unknown> | undefined): MessageWithKeyEpoch {
  if (!row) throw new Error('the key epoch row is missing (migration 0013-key-epoch)');
  const { key_epoch, statuses, i: _order, ...message } = row;
  const epoch = Number(key_epoch);
  if (message.id === null || message.id === undefined) return { found: undefined, epoch };
  return { found: { message: message as unknown as MessageRead, statuses: historyOf(statuses) }, epoch };
}

/**
 * PostgreSQL: several reads of `findMessageWithKeyEpoch` (one turn of the event loop's) in one
 * statement, a row per read in their order; each read names our ID or the provider's (the other
 * is null). The arrays are read through sub-selects so that the statement keeps one generic plan.
 */
const READ_LIST = sql.raw([...MESSAGE_READ_COLUMNS, 'status_history'].join(', '));
const messagesWithKeyEpoch = precompiled<Record<string, unknown>>((db) => ({
  compile: () =>
    sql`select ${sql.raw(MESSAGE_READ_COLUMNS.map((c) => `m.${c}`).join(', '))}, m.status_history as statuses,
        k.epoch as key_epoch, v.i
      from key_epoch k
      cross join unnest((select ${slot<string[]>(0)}::text[]), (select ${slot<(string | null)[]>(1)}::text[]),
        (select ${slot<(string | null)[]>(2)}::text[])) with ordinality as v(org_id, id, provider_message_id, i)
      left join lateral (
        select ${READ_LIST} from messages where v.id is not null and id = v.id and org_id = v.org_id
        union all
        select ${READ_LIST} from messages
        where v.provider_message_id is not null and provider_message_id = v.provider_message_id and org_id = v.org_id
      ) m on true
      where k.id = 1
      order by v.i`.compile(db),
}));

/**
 * The same, and the key epoch, in one statement (a GET whose cached key awaits the epoch; see
 * confirmKeyEpoch): on PostgreSQL one round trip instead of three, shared by the reads of one turn
 * of the event loop; on SQLite one read transaction, run with the others of its turn just after it
 * (see `batchedReads`).
 */
export const findMessageWithKeyEpoch = batchedReads<{ orgId: string; id: string }, MessageWithKeyEpoch>(
  async (db, { orgId, id }) => {
    const query = id.startsWith('msg_') ? messageById : messageByProviderMessageId;
    return splitMessageRow((await query(db, [id, orgId])).rows[0]);
  },
  async (db, reads) => {
    const { rows } = await messagesWithKeyEpoch(db, [
      reads.map((r) => r.orgId),
      reads.map((r) => (r.id.startsWith('msg_') ? r.id : null)),
      reads.map((r) => (r.id.startsWith('msg_') ? null : r.id)),
    ]);
    return reads.map((_, i) => splitMessageRow(rows[i]));
  },
);
