import type { Kysely } from 'kysely';
import { type KeyEpochConfirmer, readConfirmingKey } from '../auth/index.js';
import { isUniqueViolation } from '../db/db-errors.js';
import type { DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { publishLive } from '../live/index.js';
import { findMediaByIds, type Media } from '../media/index.js';
import { findMessageContents, inboundFields, type OutboundContent } from '../messaging/index.js';
import { clip } from '../shared/clip.js';
import type { Clock } from '../shared/clock.js';
import { decodeCursor, encodeCursor } from '../shared/cursor.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { emitConversationClosed } from './conversation.events.js';
import { findConversation, findConversationWithKeyEpoch, findOpenConversation } from './conversation.fast.js';
import {
  type ConversationFilter,
  closeConversationRow,
  closeIdleRows,
  countOpenConversationRows,
  insertConversation,
  listConversationRows,
  listThreadRows,
  type ThreadRow,
} from './conversation.repository.js';
import type { ConversationListQuery, ThreadMessage, ThreadQuery } from './conversation.schemas.js';
import type { ConversationStatus, ConversationTable, MessageAuthorTable } from './conversation.tables.js';
import { type Handling, handlingOf } from './handling.model.js';
import { authorsOf } from './message-author.repository.js';

export type { Handoff } from './handling.model.js';

/** A conversation as the API shows it. */
export interface Conversation extends Handling {
  id: string;
  agentId: string;
  endUserId: string;
  triggerId: string | null;
  campaignId: string | null;
  status: ConversationStatus;
  context: Record<string, unknown> | null;
  startedAt: number;
  lastMessageAt: number;
  closedAt: number | null;
}

export function toConversation(row: ConversationTable): Conversation {
  return {
    id: row.id,
    agentId: row.agent_id,
    endUserId: row.end_user_id,
    triggerId: row.trigger_id,
    campaignId: row.campaign_id,
    status: row.status,
    context: row.context === null ? null : (JSON.parse(row.context) as Record<string, unknown>),
    startedAt: Number(row.started_at),
    lastMessageAt: Number(row.last_message_at),
    closedAt: row.closed_at === null ? null : Number(row.closed_at),
    ...handlingOf(row),
  };
}

/** What the conversation verbs need: the database, the job runner (events), the clock, the idle time. */
export interface ConversationDeps {
  readonly db: Kysely<DB>;
  readonly jobs: JobRunner;
  readonly clock: Clock;
  /** A conversation with no message for this long is closed. */
  readonly idleMs: number;
}

/** Who reads: a whole organization, or one agent of it (an agent key). */
export interface Reader {
  readonly orgId: string;
  /** Set for an agent key: only that agent's conversations exist for it. */
  readonly agentId: string | null;
}

export interface OpenInput {
  readonly orgId: string;
  readonly agentId: string;
  readonly endUserId: string;
  readonly triggerId?: string | null;
  readonly campaignId?: string | null;
  readonly context?: Record<string, unknown> | null;
  readonly at: number;
}

/**
 * The open conversation of the agent with the end user, or a new one. One open conversation per
 * pair: the database's partial unique index decides a race between two requests (or nodes), and
 * the loser joins the winner's conversation. An open conversation idle past `idleMs` is closed
 * here first (as the sweep would), so a late sweep never joins a new message to a stale thread.
 */
export async function openConversation(
  deps: ConversationDeps,
  input: OpenInput,
): Promise<{ row: ConversationTable; created: boolean }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const open = await findOpenConversation(deps.db, input.orgId, input.agentId, input.endUserId);
    if (open && input.at - Number(open.last_message_at) > deps.idleMs) {
      await closeConversation(deps, { orgId: input.orgId, agentId: null }, open.id, 'idle');
      continue;
    }
    if (open) return { row: open, created: false };
    const now = deps.clock.now();
    const row: ConversationTable = {
      id: newId('cnv'),
      org_id: input.orgId,
      agent_id: input.agentId,
      end_user_id: input.endUserId,
      trigger_id: input.triggerId ?? null,
      campaign_id: input.campaignId ?? null,
      status: 'open',
      context: input.context ? JSON.stringify(input.context) : null,
      started_at: now,
      last_message_at: input.at,
      closed_at: null,
      updated_at: now,
    };
    try {
      await insertConversation(deps.db, row);
      return { row, created: true };
    } catch (err) {
      // Another request opened one for this pair at the same moment: join it. Inside a
      // transaction (which PostgreSQL has aborted) the caller runs the whole transaction again.
      if (!isUniqueViolation(err) || deps.db.isTransaction) throw err;
    }
  }
  throw new AppError('SERVICE_UNAVAILABLE', 'The conversation could not be opened; retry.');
}

export type CloseReason = 'closed' | 'idle';

/**
 * Closes a conversation (the agent's request, or idleness) and raises `conversation.closed` in the
 * same transaction. A conversation already closed is answered as it is.
 */
export async function closeConversation(
  deps: ConversationDeps,
  reader: Reader,
  id: string,
  reason: CloseReason,
): Promise<Conversation> {
  const existing = await getConversationRow(deps.db, reader, id);
  if (existing.status === 'closed') return toConversation(existing);
  const at = deps.clock.now();
  const close = async (trx: Kysely<DB>) => {
    const row = await closeConversationRow(trx, existing.org_id, id, at);
    if (row) {
      await emitConversationClosed({ ...deps, db: trx }, row, reason);
      await publishLive(trx, { orgId: row.org_id, conversationIds: [row.id], kind: 'handling' });
    }
    return row;
  };
  const closed = deps.db.isTransaction ? await close(deps.db) : await deps.db.transaction().execute(close);
  return toConversation(closed ?? (await getConversationRow(deps.db, reader, id)));
}

/**
 * Closes every conversation idle past `idleMs` (in batches), each with its `conversation.closed`.
 * The UPDATE claims the rows, so two nodes sweeping at once close each conversation once.
 */
export async function closeIdleConversations(deps: ConversationDeps, batch = 500): Promise<number> {
  let total = 0;
  for (;;) {
    const at = deps.clock.now();
    const closed = await deps.db.transaction().execute(async (trx) => {
      const rows = await closeIdleRows(trx, at - deps.idleMs, at, batch);
      for (const row of rows) await emitConversationClosed({ ...deps, db: trx }, row, 'idle');
      for (const [orgId, ids] of idsByOrg(rows)) {
        await publishLive(trx, { orgId, conversationIds: ids, kind: 'handling' });
      }
      return rows.length;
    });
    total += closed;
    if (closed < batch) return total;
  }
}

/** Conversation IDs by organization. */
export function idsByOrg(rows: readonly { readonly org_id: string; readonly id: string }[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const row of rows) {
    const ids = out.get(row.org_id);
    if (ids) ids.push(row.id);
    else out.set(row.org_id, [row.id]);
  }
  return out;
}

const notFound = (id: string) => new AppError('NOT_FOUND', `No conversation with ID '${clip(id, 64)}'.`);

/** A conversation the reader may see; another organization's or another agent's is not found. */
export async function getConversationRow(db: Kysely<DB>, reader: Reader, id: string): Promise<ConversationTable> {
  const row = await findConversation(db, reader.orgId, id);
  if (!row || (reader.agentId !== null && row.agent_id !== reader.agentId)) throw notFound(id);
  return row;
}

/** `confirmKey`: given when the request's key still awaits the epoch this read returns (src/auth/key-epoch.ts). */
export async function getConversation(
  db: Kysely<DB>,
  reader: () => Reader,
  id: string,
  confirmKey?: KeyEpochConfirmer,
): Promise<Conversation> {
  const row = await readConfirmingKey(
    confirmKey,
    () => findConversation(db, reader().orgId, id),
    () => findConversationWithKeyEpoch(db, { orgId: reader().orgId, id }),
  );
  // The key is confirmed before anything is answered, a 404 included (the reader may change with it).
  const { agentId } = reader();
  if (!row || (agentId !== null && row.agent_id !== agentId)) throw notFound(id);
  return toConversation(row);
}

/** Conversation IDs, and the IDs of a thread's messages (ours, or the provider's). */
const CURSOR_ID = /^\P{Cc}{1,512}$/u;

function decodeListCursor(text: string): { at: number; id: string } {
  const position = decodeCursor(text, CURSOR_ID);
  if (!position) {
    throw new AppError('INVALID_BODY', "Invalid query parameter: 'cursor' is not a cursor this API returned.");
  }
  return position;
}

/**
 * The reader's conversations, newest first. An agent key lists only its agent's; naming another
 * agent with it is 403, as a send to another agent is.
 */
export async function listConversations(
  db: Kysely<DB>,
  reader: Reader,
  query: ConversationListQuery,
): Promise<{ data: Conversation[]; nextCursor: string | null }> {
  if (reader.agentId !== null && query.agent !== undefined && query.agent !== reader.agentId) {
    throw new AppError('FORBIDDEN', 'This API key is bound to another agent.');
  }
  const limit = query.limit ?? 50;
  const filter: ConversationFilter = {};
  const agentId = reader.agentId ?? query.agent;
  if (agentId !== undefined) filter.agentId = agentId;
  if (query.endUser !== undefined) filter.endUserId = query.endUser;
  if (query.status !== undefined) filter.status = query.status;
  if (query.handler !== undefined) filter.handler = query.handler;
  if (query.assignee !== undefined) filter.assigneeId = query.assignee === 'none' ? null : query.assignee;
  if (query.updatedSince !== undefined) filter.updatedSince = query.updatedSince;
  if (query.cursor !== undefined) {
    const c = decodeListCursor(query.cursor);
    filter.after = { startedAt: c.at, id: c.id };
  }
  const rows = await listConversationRows(db, reader.orgId, filter, limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map(toConversation),
    nextCursor: rows.length > limit && last ? encodeCursor(Number(last.started_at), last.id) : null,
  };
}

/** How many conversations of the organization are open now. */
export async function countOpenConversations(db: Kysely<DB>, orgId: string): Promise<number> {
  return countOpenConversationRows(db, orgId);
}

/** Who sent an outbound message: a person or Parley when its author was recorded, else the agent. */
export function sentByOf(author: MessageAuthorTable | undefined): NonNullable<ThreadMessage['sentBy']> {
  if (!author) return { type: 'agent' };
  if (author.kind === 'parley') return { type: 'parley' };
  return {
    type: 'user',
    ...(author.user_id ? { id: author.user_id } : {}),
    ...(author.name ? { name: author.name } : {}),
  };
}

function toThreadMessage(
  row: ThreadRow,
  media: ReadonlyMap<string, Media>,
  authors: ReadonlyMap<string, MessageAuthorTable>,
  contents: ReadonlyMap<string, OutboundContent>,
): ThreadMessage {
  const base = {
    id: row.id,
    direction: row.direction,
    type: row.type,
    messageId: row.messageId,
    createdAt: row.createdAt,
  };
  if (row.direction === 'inbound') {
    const { type: _, ...fields } = inboundFields(
      { type: row.inboundType, text: row.text, reply_to: row.inbound?.replyTo, content: row.inbound?.content },
      row.inbound?.mediaId ? media.get(row.inbound.mediaId) : undefined,
    );
    return { ...base, ...fields, ...(row.inboundType ? { inboundType: row.inboundType } : {}) };
  }
  const parameters = row.templateParameters
    ? (JSON.parse(row.templateParameters) as { body: string[]; header: string[] })
    : undefined;
  const sent = contents.get(row.id);
  return {
    ...base,
    ...(row.type === 'message' ? { text: row.text } : {}),
    ...(row.type === 'template' && row.templateName !== null
      ? {
          template: {
            name: row.templateName,
            language: row.templateLanguage,
            ...(parameters ? { parameters } : {}),
            ...(sent?.headerMedia ? { headerMedia: sent.headerMedia } : {}),
          },
        }
      : {}),
    ...(sent?.media ? { media: sent.media } : {}),
    ...(sent?.buttons ? { buttons: [...sent.buttons] } : {}),
    // Stored as the send's checked body: the schema's own shape.
    ...(sent?.list ? { list: sent.list as NonNullable<ThreadMessage['list']> } : {}),
    ...(sent?.replyTo !== undefined ? { replyTo: sent.replyTo } : {}),
    ...(row.status !== null ? { status: row.status } : {}),
    sentBy: sentByOf(authors.get(row.id)),
  };
}

/** The thread of a conversation the reader may see, oldest first, both directions. */
export async function listConversationMessages(
  db: Kysely<DB>,
  reader: Reader,
  id: string,
  query: ThreadQuery,
): Promise<{ data: ThreadMessage[]; nextCursor: string | null }> {
  const conversation = await getConversationRow(db, reader, id);
  const limit = query.limit ?? 50;
  const after = query.cursor !== undefined ? decodeListCursor(query.cursor) : undefined;
  const rows = await listThreadRows(
    db,
    conversation.id,
    after ? { createdAt: after.at, id: after.id } : undefined,
    limit + 1,
  );
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const mediaIds = page.flatMap((r) => (r.inbound?.mediaId ? [r.inbound.mediaId] : []));
  const media = new Map((await findMediaByIds(db, reader.orgId, mediaIds)).map((m) => [m.id, m]));
  const authors = new Map(
    (
      await authorsOf(
        db,
        page.filter((r) => r.direction === 'outbound').map((r) => r.id),
      )
    ).map((a) => [a.message_id, a]),
  );
  const contents = await findMessageContents(
    db,
    reader.orgId,
    page.filter((r) => r.direction === 'outbound').map((r) => r.id),
  );
  return {
    data: page.map((row) => toThreadMessage(row, media, authors, contents)),
    nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null,
  };
}
