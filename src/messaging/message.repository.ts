import { type Kysely, type Selectable, sql } from 'kysely';
import { isUniqueViolation } from '../db/db-errors.js';
import { batchedOnPostgres, batchedReads, isPostgres, precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import type { MessageStatusTable, MessageTable } from './messaging.tables.js';

export const WINDOW_MS = 24 * 60 * 60 * 1000;

/** Delivery statuses in the only order they may move; failed is final, so it ranks highest. */
export const STATUS_RANK = {
  pending: 0,
  unconfirmed: 0,
  accepted: 1,
  sent: 2,
  delivered: 3,
  read: 4,
  failed: 5,
  rejected: 5,
} as const;
export type MessageStatus = keyof typeof STATUS_RANK;
export const PROVIDER_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const;
export type ProviderStatus = (typeof PROVIDER_STATUSES)[number];

export interface StatusEvent {
  readonly status: ProviderStatus;
  readonly occurredAt: number;
  readonly receivedAt: number;
  readonly errorCode: number | null;
  readonly errorMessage: string | null;
}

export const MESSAGE_COLUMNS = [
  'id',
  'org_id',
  'agent_id',
  'number_id',
  'to_phone',
  'type',
  'template_name',
  'provider_message_id',
  'status',
  'status_rank',
  'error_code',
  'error_message',
  'created_at',
  'updated_at',
  'conversation_id',
  'text',
  'template_language',
  'template_parameters',
] as const satisfies readonly (keyof MessageTable)[];

/** Each column's type on PostgreSQL (its migrations), for placeholders that must say it. */
export const MESSAGE_COLUMN_TYPES: Record<(typeof MESSAGE_COLUMNS)[number], 'text' | 'integer' | 'bigint'> = {
  id: 'text',
  org_id: 'text',
  agent_id: 'text',
  number_id: 'text',
  to_phone: 'text',
  type: 'text',
  template_name: 'text',
  provider_message_id: 'text',
  status: 'text',
  status_rank: 'integer',
  error_code: 'integer',
  error_message: 'text',
  created_at: 'bigint',
  updated_at: 'bigint',
  conversation_id: 'text',
  text: 'text',
  template_language: 'text',
  template_parameters: 'text',
};

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

export async function markSendFailed(
  db: Kysely<DB>,
  id: string,
  status: 'rejected' | 'unconfirmed',
  errorCode: number | null,
  errorMessage: string,
  at: number,
): Promise<void> {
  await db
    .updateTable('messages')
    .set({
      status,
      status_rank: STATUS_RANK[status],
      error_code: errorCode,
      error_message: errorMessage,
      updated_at: at,
    })
    .where('id', '=', id)
    .where('status_rank', '<=', STATUS_RANK.pending)
    .execute();
}

const messageByProviderId = precompiled((db) =>
  db.selectFrom('messages').select(['id', 'provider_message_id']).where('provider_message_id', '=', slot<string>(0)),
);

/** The same, scoped to the number the webhook names: a status never moves another number's message. */
const messageByProviderIdOfNumber = precompiled((db) =>
  db
    .selectFrom('messages')
    .innerJoin('messaging_numbers', 'messaging_numbers.id', 'messages.number_id')
    .select(['messages.id', 'messages.provider_message_id'])
    .where('messages.provider_message_id', '=', slot<string>(0))
    .where('messaging_numbers.phone_number_id', '=', slot<string>(1)),
);

export interface StatusTarget {
  readonly id: string;
  /** Null when the send never learnt it (the provider's answer was lost): the status brings it. */
  readonly providerMessageId: string | null;
}

/**
 * The message a status webhook is about: by provider ID, else by our ID sent as callback data;
 * when the webhook names its number (`metadata.phone_number_id`), only a message of that number.
 */
export async function findMessageForStatus(
  db: Kysely<DB>,
  providerMessageId: string,
  callbackData: string | undefined,
  phoneNumberId: string | undefined,
): Promise<StatusTarget | undefined> {
  const byProvider = (
    phoneNumberId
      ? await messageByProviderIdOfNumber(db, [providerMessageId, phoneNumberId])
      : await messageByProviderId(db, [providerMessageId])
  ).rows[0];
  if (byProvider) return { id: byProvider.id, providerMessageId: byProvider.provider_message_id };
  if (!callbackData?.startsWith('msg_')) return undefined;
  let query = db
    .selectFrom('messages')
    .innerJoin('messaging_numbers', 'messaging_numbers.id', 'messages.number_id')
    .select(['messages.id', 'messages.provider_message_id'])
    .where('messages.id', '=', callbackData);
  if (phoneNumberId) query = query.where('messaging_numbers.phone_number_id', '=', phoneNumberId);
  const byCallback = await query.executeTakeFirst();
  if (!byCallback) return undefined;
  // Callback data of another message of ours must not attach statuses to it.
  if (byCallback.provider_message_id !== null && byCallback.provider_message_id !== providerMessageId) return undefined;
  return { id: byCallback.id, providerMessageId: byCallback.provider_message_id };
}

/**
 * A status carrying our callback data proves the provider accepted a message whose send never
 * learnt its ID (a timeout, a lost answer): records the ID, so GET /api/messages/<wamid> finds it,
 * and clears the "unconfirmed" error of that send. Returns false when another message already has
 * that ID (then nothing changes).
 */
export async function adoptProviderMessageId(
  db: Kysely<DB>,
  messageId: string,
  providerMessageId: string,
  at: number,
): Promise<boolean> {
  try {
    await db
      .updateTable('messages')
      .set({
        provider_message_id: providerMessageId,
        status: sql<string>`case when status = 'unconfirmed' then 'accepted' else status end`,
        status_rank: sql<number>`case when status = 'unconfirmed' then ${STATUS_RANK.accepted} else status_rank end`,
        error_code: sql<number | null>`case when status = 'unconfirmed' then null else error_code end`,
        error_message: sql<string | null>`case when status = 'unconfirmed' then null else error_message end`,
        updated_at: at,
      })
      .where('id', '=', messageId)
      .where('provider_message_id', 'is', null)
      .execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

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

export async function storePendingStatus(
  db: Kysely<DB>,
  providerMessageId: string,
  event: StatusEvent,
  phoneNumberId: string | undefined,
): Promise<void> {
  await db
    .insertInto('pending_statuses')
    .values({
      provider_message_id: providerMessageId,
      phone_number_id: phoneNumberId ?? null,
      status: event.status,
      occurred_at: event.occurredAt,
      received_at: event.receivedAt,
      error_code: event.errorCode,
      error_message: event.errorMessage,
    })
    .onConflict((oc) => oc.columns(['provider_message_id', 'status']).doNothing())
    .execute();
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

type PendingRow = Selectable<DB['pending_statuses']>;

/** The pending statuses of a provider message ID (on PostgreSQL, one read for those of one turn of the event loop). */
const pendingOf = batchedOnPostgres<string, PendingRow[]>(
  async (db, providerMessageId) => (await pendingQuery(db, [providerMessageId])).rows,
  async (db, ids) => {
    const rows = (await pendingOfManyQuery(db, [ids])).rows;
    return ids.map((id) => rows.filter((r) => r.provider_message_id === id));
  },
);

/**
 * Applies statuses that arrived before the message was stored (those reported for the message's
 * own number, or for no number in particular); returns them, in the order applied.
 */
export async function applyPendingStatuses(
  db: Kysely<DB>,
  messageId: string,
  providerMessageId: string,
  phoneNumberId: string | undefined,
): Promise<StatusEvent[]> {
  const pending = (await pendingOf(db, providerMessageId)).filter(
    (p) => p.phone_number_id === null || phoneNumberId === undefined || p.phone_number_id === phoneNumberId,
  );
  if (pending.length === 0) return [];
  const applied: StatusEvent[] = [];
  for (const p of pending.sort(
    (a, b) => STATUS_RANK[a.status as ProviderStatus] - STATUS_RANK[b.status as ProviderStatus],
  )) {
    const event: StatusEvent = {
      status: p.status as ProviderStatus,
      occurredAt: Number(p.occurred_at),
      receivedAt: Number(p.received_at),
      errorCode: p.error_code,
      errorMessage: p.error_message,
    };
    await applyStatus(db, messageId, event);
    applied.push(event);
  }
  await db
    .deleteFrom('pending_statuses')
    .where('provider_message_id', '=', providerMessageId)
    .where(
      'status',
      'in',
      pending.map((p) => p.status),
    )
    .execute();
  return applied;
}

/** How long a status for a message Parley does not know is kept: the provider's retry horizon. */
export const PENDING_STATUS_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/** Deletes pending statuses received before `cutoff`; returns how many. */
export async function purgePendingStatuses(db: Kysely<DB>, cutoff: number): Promise<number> {
  const result = await db.deleteFrom('pending_statuses').where('received_at', '<', cutoff).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Messages that now have the provider ID of a pending status reported for their number (or for
 * none): statuses a send would have applied just after its answer, had its process not stopped
 * first. At most `limit`, each once, with its number's provider ID.
 */
export async function messagesWithPendingStatuses(
  db: Kysely<DB>,
  limit: number,
): Promise<{ id: string; providerMessageId: string; phoneNumberId: string }[]> {
  const rows = await db
    .selectFrom('pending_statuses')
    .innerJoin('messages', 'messages.provider_message_id', 'pending_statuses.provider_message_id')
    .innerJoin('messaging_numbers', 'messaging_numbers.id', 'messages.number_id')
    .where((eb) =>
      eb.or([
        eb('pending_statuses.phone_number_id', 'is', null),
        eb('pending_statuses.phone_number_id', '=', eb.ref('messaging_numbers.phone_number_id')),
      ]),
    )
    .select(['messages.id', 'messages.provider_message_id', 'messaging_numbers.phone_number_id'])
    .distinct()
    .orderBy('messages.id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    providerMessageId: r.provider_message_id as string,
    phoneNumberId: r.phone_number_id,
  }));
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

/** Opens or renews the window (`userKey`: `windowKey()` of the phone); a message delivered late does not shorten it. */
export async function openWindow(db: Kysely<DB>, numberId: string, userKey: string, at: number): Promise<void> {
  await db
    .insertInto('messaging_windows')
    .values({ number_id: numberId, user_phone: userKey, last_inbound_at: at })
    .onConflict((oc) =>
      oc.columns(['number_id', 'user_phone']).doUpdateSet({
        last_inbound_at: sql<number>`case when excluded.last_inbound_at > messaging_windows.last_inbound_at then excluded.last_inbound_at else messaging_windows.last_inbound_at end`,
      }),
    )
    .execute();
}

/** The columns of a message that `GET /api/messages/<id>` shows (and the agent, for agent keys). */
export const MESSAGE_READ_COLUMNS = [
  'id',
  'agent_id',
  'to_phone',
  'type',
  'template_name',
  'provider_message_id',
  'status',
  'error_code',
  'error_message',
  'created_at',
  'updated_at',
] as const satisfies readonly (typeof MESSAGE_COLUMNS)[number][];

/** A message as read for its answer: only the columns it shows. */
export type MessageRead = Pick<MessageTable, (typeof MESSAGE_READ_COLUMNS)[number]>;

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

export type StatusRow = Omit<MessageStatusTable, 'message_id'>;

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
