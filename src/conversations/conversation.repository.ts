import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import type { ConversationTable } from './conversation.tables.js';

/** SQL of conversations and their threads outside the hot path (that is in conversation.fast.ts); nothing else. */

export async function insertConversation(db: Kysely<DB>, row: ConversationTable): Promise<void> {
  await db.insertInto('conversations').values(row).execute();
}

/** Deletes a conversation that turned out never to have started (its opening send failed). */
export async function deleteUnstartedConversation(db: Kysely<DB>, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.updateTable('messages').set({ conversation_id: null }).where('conversation_id', '=', id).execute();
    await trx.deleteFrom('conversations').where('id', '=', id).execute();
  });
}

/** Closes an open conversation; returns the closed row, or undefined when it was not open. */
export async function closeConversationRow(
  db: Kysely<DB>,
  orgId: string,
  id: string,
  at: number,
): Promise<ConversationTable | undefined> {
  return db
    .updateTable('conversations')
    .set({ status: 'closed', closed_at: at, updated_at: at })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('status', '=', 'open')
    .returningAll()
    .executeTakeFirst();
}

/** Closes up to `limit` open conversations whose last message is older than `cutoff`; returns them. */
export async function closeIdleRows(
  db: Kysely<DB>,
  cutoff: number,
  at: number,
  limit: number,
): Promise<ConversationTable[]> {
  return db
    .updateTable('conversations')
    .set({ status: 'closed', closed_at: at, updated_at: at })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('conversations')
        .select('id')
        .where('status', '=', 'open')
        .where('last_message_at', '<', cutoff)
        .limit(limit),
    )
    .where('status', '=', 'open')
    .returningAll()
    .execute();
}

export interface ConversationFilter {
  agentId?: string;
  endUserId?: string;
  status?: 'open' | 'closed';
  handler?: 'bot' | 'human';
  /** A person's ID, or null for conversations assigned to nobody. */
  assigneeId?: string | null;
  updatedSince?: number;
  after?: { startedAt: number; id: string };
}

/** Newest first on (started_at, id): a keyset seek. */
export async function listConversationRows(
  db: Kysely<DB>,
  orgId: string,
  filter: ConversationFilter,
  limit: number,
): Promise<ConversationTable[]> {
  let query = db.selectFrom('conversations').selectAll().where('org_id', '=', orgId);
  if (filter.agentId !== undefined) query = query.where('agent_id', '=', filter.agentId);
  if (filter.endUserId !== undefined) query = query.where('end_user_id', '=', filter.endUserId);
  if (filter.status !== undefined) query = query.where('status', '=', filter.status);
  if (filter.handler !== undefined) query = query.where('handler', '=', filter.handler);
  if (filter.assigneeId !== undefined) {
    query =
      filter.assigneeId === null
        ? query.where('assignee_id', 'is', null)
        : query.where('assignee_id', '=', filter.assigneeId);
  }
  if (filter.updatedSince !== undefined) query = query.where('updated_at', '>=', filter.updatedSince);
  const after = filter.after;
  if (after) {
    query = query
      .where('started_at', '<=', after.startedAt)
      .where((eb) => eb.or([eb('started_at', '<', after.startedAt), eb('id', '<', after.id)]));
  }
  return query.orderBy('started_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

/** How many of the organization's conversations are open (the dashboard's home page). */
export async function countOpenConversationRows(db: Kysely<DB>, orgId: string): Promise<number> {
  const row = await db
    .selectFrom('conversations')
    .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
    .where('org_id', '=', orgId)
    .where('status', '=', 'open')
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** One message of a thread, either direction, as both tables give it. */
export interface ThreadRow {
  readonly id: string;
  readonly direction: 'inbound' | 'outbound';
  readonly type: 'template' | 'message';
  readonly text: string | null;
  readonly templateName: string | null;
  readonly templateLanguage: string | null;
  readonly templateParameters: string | null;
  readonly messageId: string | null;
  readonly status: string | null;
  readonly inboundType: string | null;
  readonly createdAt: number;
  /** Inbound: its file, the message it replies to, what its kind carries (JSON). */
  readonly inbound?: {
    readonly mediaId: string | null;
    readonly replyTo: string | null;
    readonly content: string | null;
  };
}

/**
 * Up to `limit` messages of a conversation after `after` (oldest first on (createdAt, id)): the
 * outbound ones from `messages`, the inbound ones from `inbound_messages` (whose ID is the
 * provider's), merged.
 */
export async function listThreadRows(
  db: Kysely<DB>,
  conversationId: string,
  after: { createdAt: number; id: string } | undefined,
  limit: number,
): Promise<ThreadRow[]> {
  // The two directions are merged and sorted here in byte order, so on PostgreSQL the IDs are
  // ordered and compared in byte order too (COLLATE "C"): a linguistic collation (en_US, say) orders
  // `msg_a…` and `msg_B…` the other way round, and a page boundary between two messages of the same
  // millisecond would then skip or repeat one. SQLite compares text in byte order already.
  const pg = isPostgres(db);
  const bytes = (column: 'id' | 'provider_message_id') =>
    pg ? sql<string>`${sql.ref(column)} collate "C"` : sql<string>`${sql.ref(column)}`;
  let out = db
    .selectFrom('messages')
    .select([
      'id',
      'type',
      'text',
      'template_name',
      'template_language',
      'template_parameters',
      'provider_message_id',
      'status',
      'created_at',
    ])
    .where('conversation_id', '=', conversationId);
  let inbound = db
    .selectFrom('inbound_messages')
    .select(['provider_message_id', 'text', 'type', 'received_at', 'media_id', 'reply_to', 'content'])
    .where('conversation_id', '=', conversationId);
  if (after) {
    out = out
      .where('created_at', '>=', after.createdAt)
      .where((eb) => eb.or([eb('created_at', '>', after.createdAt), eb(bytes('id'), '>', after.id)]));
    inbound = inbound
      .where('received_at', '>=', after.createdAt)
      .where((eb) => eb.or([eb('received_at', '>', after.createdAt), eb(bytes('provider_message_id'), '>', after.id)]));
  }
  const [outRows, inRows] = await Promise.all([
    out.orderBy('created_at').orderBy(bytes('id')).limit(limit).execute(),
    inbound.orderBy('received_at').orderBy(bytes('provider_message_id')).limit(limit).execute(),
  ]);
  const rows: ThreadRow[] = [
    ...outRows.map(
      (r): ThreadRow => ({
        id: r.id,
        direction: 'outbound',
        type: r.type,
        text: r.text,
        templateName: r.template_name,
        templateLanguage: r.template_language,
        templateParameters: r.template_parameters,
        messageId: r.provider_message_id,
        status: r.status,
        inboundType: null,
        createdAt: Number(r.created_at),
      }),
    ),
    ...inRows.map(
      (r): ThreadRow => ({
        id: r.provider_message_id,
        direction: 'inbound',
        type: 'message',
        text: r.text,
        templateName: null,
        templateLanguage: null,
        templateParameters: null,
        messageId: r.provider_message_id,
        status: null,
        inboundType: r.type,
        createdAt: Number(r.received_at),
        inbound: { mediaId: r.media_id ?? null, replyTo: r.reply_to ?? null, content: r.content ?? null },
      }),
    ),
  ];
  rows.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return rows.slice(0, limit);
}

/** The agents a number is assigned to in its organization, oldest first. */
export async function agentsOfNumber(db: Kysely<DB>, orgId: string, numberId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('agents')
    .select('id')
    .where('org_id', '=', orgId)
    .where('number_id', '=', numberId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}

/** Of these agents, the one with the most recently active open conversation with the end user. */
export async function agentWithOpenConversation(
  db: Kysely<DB>,
  orgId: string,
  agentIds: readonly string[],
  endUserId: string,
): Promise<string | undefined> {
  if (agentIds.length === 0) return undefined;
  const row = await db
    .selectFrom('conversations')
    .select('agent_id')
    .where('org_id', '=', orgId)
    .where('end_user_id', '=', endUserId)
    .where('status', '=', 'open')
    .where('agent_id', 'in', agentIds)
    .orderBy('last_message_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.agent_id;
}

/** Sets the conversation of an inbound message (idempotent). */
export async function setInboundConversation(
  db: Kysely<DB>,
  providerMessageId: string,
  conversationId: string,
): Promise<void> {
  await db
    .updateTable('inbound_messages')
    .set({ conversation_id: conversationId })
    .where('provider_message_id', '=', providerMessageId)
    .execute();
}
