import { sql } from 'kysely';
import { keyCacheOf } from '../auth/key-cache.js';
import type { AppContext } from '../context.js';
import { emitConversationStarted } from '../conversations/conversation.events.js';
import { type ConversationDeps, openConversation } from '../conversations/conversation.service.js';
import {
  deleteUnstartedConversation,
  findRecipient,
  findRecipientStoringMessage,
  touchConversation,
} from '../conversations/index.js';
import { raiseMessageStatuses } from '../conversations/status-events.js';
import { batchedOnPostgres, onPostgresPool, precompiled, slot } from '../db/precompiled.js';
import {
  deleteEndUserMadeForSend,
  type EndUserFields,
  findOrCreateEndUserByPhone,
} from '../end-users/end-user-by-phone.js';
import type { KeyEpochConfirmer } from '../http/auth.js';
import {
  applyPendingStatuses,
  insertMessage,
  isWindowOpen,
  markAccepted,
  markSendFailed,
  STATUS_RANK,
} from '../messaging/index.js';
import type { MessageTable } from '../messaging/messaging.tables.js';
import type { ProviderResult, ProviderSend } from '../messaging/provider.js';
import type { AfterAnswer } from '../shared/after-answer.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { endUserPhoneOf, windowKey } from '../shared/phone.js';

/**
 * A 502 after which the provider may have accepted the message (it did not answer in time, the
 * connection was lost after the request went out). The idempotency layer keeps this answer under
 * the key, so a retry with the same key is told so instead of sending a second time.
 */
export class SendOutcomeUnknown extends AppError {
  constructor(message: string) {
    super('PROVIDER_UNAVAILABLE', message);
    this.name = 'SendOutcomeUnknown';
  }
}

/** The target agent and its number (of the same organization), in one query. */
const agentWithNumber = precompiled((db) =>
  db
    .selectFrom('agents')
    .leftJoin('messaging_numbers', (join) =>
      join
        .onRef('messaging_numbers.id', '=', 'agents.number_id')
        .onRef('messaging_numbers.org_id', '=', 'agents.org_id'),
    )
    .select([
      'agents.id as agent_id',
      'messaging_numbers.id as number_id',
      'messaging_numbers.phone_number_id',
      'messaging_numbers.access_token_enc',
    ])
    .where('agents.org_id', '=', slot<string>(0))
    .where('agents.id', '=', slot<string>(1)),
);

/** PostgreSQL: the acceptance and the conversation's last message time in one statement. */
const acceptAndTouch = precompiled((db) =>
  db
    .with('accepted', (q) =>
      q
        .updateTable('messages')
        .set({
          provider_message_id: slot<string>(0),
          status: sql<string>`case when status_rank < ${STATUS_RANK.accepted} then 'accepted' else status end`,
          status_rank: sql<number>`case when status_rank < ${STATUS_RANK.accepted} then ${STATUS_RANK.accepted} else status_rank end`,
          updated_at: slot<number>(1),
        })
        .where('id', '=', slot<string>(2))
        .returning('id'),
    )
    .updateTable('conversations')
    .set({
      last_message_at: sql<number>`case when last_message_at < ${slot<number>(3)} then ${slot<number>(3)} else last_message_at end`,
      updated_at: slot<number>(1),
    })
    .where('id', '=', slot<string>(4)),
);

/**
 * PostgreSQL: the acceptances of several sends (one turn of the event loop's) in one statement. A
 * conversation that two of them touch moves on to the later of their times. The arrays are read
 * through sub-selects so that the planner cannot see their length: a plan made for the values at
 * hand looks cheaper than the generic one every time, so each run would be planned again (about a
 * third of the statement's time); this way the prepared statement keeps its one generic plan.
 */
const acceptManyAndTouch = precompiled((db) => ({
  compile: () =>
    sql`with v as (
      select * from unnest((select ${slot<string[]>(0)}::text[]), (select ${slot<string[]>(1)}::text[]),
        (select ${slot<number[]>(2)}::bigint[]), (select ${slot<(string | null)[]>(3)}::text[]),
        (select ${slot<(number | null)[]>(4)}::bigint[]))
        as v(id, provider_message_id, at, conversation_id, now)
    ), accepted as (
      update messages m set
        provider_message_id = v.provider_message_id,
        status = case when m.status_rank < ${sql.lit(STATUS_RANK.accepted)} then 'accepted' else m.status end,
        status_rank = case when m.status_rank < ${sql.lit(STATUS_RANK.accepted)} then ${sql.lit(STATUS_RANK.accepted)} else m.status_rank end,
        updated_at = v.at
      from v where m.id = v.id
    )
    update conversations c set
      last_message_at = case when c.last_message_at < t.now then t.now else c.last_message_at end,
      updated_at = t.at
    from (
      select conversation_id, max(now) as now, max(at) as at from v
      where conversation_id is not null group by conversation_id
    ) t
    where c.id = t.conversation_id`.compile(db),
}));

interface Acceptance {
  readonly id: string;
  readonly providerMessageId: string;
  readonly at: number;
  readonly conversation: { id: string; now: number } | null;
}

/**
 * The provider's ID and the `accepted` status of a message, and its conversation moved on: one
 * statement on PostgreSQL (shared by the sends of one turn of the event loop), one commit on SQLite
 * (writes issued together share it).
 */
export const recordAcceptance = batchedOnPostgres<Acceptance, void>(
  async (db, { id, providerMessageId, at, conversation }) => {
    if (conversation && onPostgresPool(db)) {
      await acceptAndTouch(db, [providerMessageId, at, id, conversation.now, conversation.id]);
      return;
    }
    await Promise.all([
      markAccepted(db, id, providerMessageId, at),
      conversation ? touchConversation(db, conversation.id, conversation.now, at) : undefined,
    ]);
  },
  async (db, items) => {
    // In the order status batches lock messages (by provider ID): two batches touching the same
    // messages wait for each other rather than deadlock.
    const sorted = [...items].sort((x, y) =>
      x.providerMessageId < y.providerMessageId ? -1 : x.providerMessageId > y.providerMessageId ? 1 : 0,
    );
    await acceptManyAndTouch(db, [
      sorted.map((a) => a.id),
      sorted.map((a) => a.providerMessageId),
      sorted.map((a) => a.at),
      sorted.map((a) => a.conversation?.id ?? null),
      sorted.map((a) => a.conversation?.now ?? null),
    ]);
    return items.map(() => undefined);
  },
);

/** What an agent sends from: its number, with the access token opened; no number when unassigned. */
interface Sender {
  readonly numberId: string | null;
  readonly phoneNumberId: string | null;
  readonly accessToken: string;
}

/**
 * The agent's sending number, kept in memory beside the keys: every change to an agent's number or
 * to a number's identity or token bumps the key epoch (migration 0014-sender-epoch), which drops it.
 */
function senderOf(ctx: AppContext, orgId: string, agentId: string): Promise<Sender | undefined> {
  return keyCacheOf(ctx.database).beside<Sender>(`sender\u0000${orgId}\u0000${agentId}`, async () => {
    const row = (await agentWithNumber(ctx.db, [orgId, agentId])).rows[0];
    if (!row) return undefined;
    return {
      numberId: row.number_id,
      phoneNumberId: row.phone_number_id,
      accessToken: row.access_token_enc ? openToken(ctx, row.access_token_enc) : 'sandbox',
    };
  });
}

/** Why the provider refused, as a sentence the caller can act on. */
export function rejectionSentence(result: Extract<ProviderResult, { ok: false }>, send: ProviderSend): string {
  const c = send.content;
  const detail = result.message ? ` (${clip(result.message, 300)})` : '';
  switch (result.code) {
    case 132001:
      return c.kind === 'template'
        ? `The provider rejected the message: template '${clip(c.name, 100)}' does not exist in language '${c.language}' or is not approved.`
        : 'The provider rejected the message: the template does not exist or is not approved.';
    case 132000:
      return `The provider rejected the message: the number of template parameters does not match the template${detail}.`;
    case 131026:
      return `The provider rejected the message: ${send.to} cannot receive it, it is not a user of the messaging app.`;
    case 131047:
      return `The provider rejected the message: more than 24 hours have passed since ${send.to} last wrote to this number; send a template instead.`;
    case 132015:
    case 132016:
      return 'The provider rejected the message: the template is paused or disabled.';
    case 131030:
      return `The provider rejected the message: ${send.to} is not on the allowed list of test recipients.`;
    default:
      break;
  }
  if (result.kind === 'throttled') {
    return `The provider refused the message because a sending rate limit was reached (code ${result.code ?? 'none'}); retry later with backoff.`;
  }
  return `The provider rejected the message${result.code !== null ? ` with code ${result.code}` : ''}${detail}.`;
}

/** A sealed access token that no longer opens (the secret key changed) is the server's problem, not the caller's. */
function openToken(ctx: AppContext, sealed: string): string {
  try {
    return ctx.messaging.secrets.open(sealed);
  } catch (err) {
    ctx.logger.error({ err }, 'the access token of a messaging number cannot be opened with the secret key');
    throw new AppError(
      'PROVIDER_UNAVAILABLE',
      "This agent's messaging number has unusable credentials; an administrator must check the secret key or add the number again.",
    );
  }
}

/** What a send from an agent's number is part of: the conversation it opens or joins. */
export interface ConversationOfSend {
  /** The origin of an end user made for the recipient. */
  readonly origin: 'manual' | 'imported';
  /** Fields of an end user made for the recipient (never applied to an existing one). */
  readonly endUser?: EndUserFields | undefined;
  readonly triggerId?: string | null;
  readonly campaignId?: string | null;
  readonly context?: Record<string, unknown> | null;
  /**
   * A recipient who cannot be an end user (a phone the end-user records refuse) is an error (a
   * trigger must open a conversation), or a send without a conversation (a plain send).
   */
  readonly required: boolean;
}

export interface SendFromAgentInput {
  readonly orgId: string;
  readonly agentId: string;
  /** E.164. */
  readonly to: string;
  readonly content: ProviderSend['content'];
  readonly conversation: ConversationOfSend;
  /** Our message ID (and the provider's callback data), when the caller chose it beforehand. */
  readonly messageId?: string;
  /**
   * The caller reserved a slot of the number's pace (a campaign delivery). Otherwise the send is
   * interactive: it goes at once and takes a slot as it goes, so campaign sends make room for it.
   */
  readonly paced?: boolean;
  /**
   * The request's key was admitted from the cache and awaits the key epoch (src/http/auth.ts):
   * called with the epoch the send's first statement read (undefined: none was read), before
   * anything else is decided or written. If the epoch had moved, the key is authenticated again
   * and the cache dropped, so the agent's number is then read afresh too.
   */
  readonly confirmKey?: KeyEpochConfirmer | undefined;
  /**
   * An API request's: the statuses that outran the send are applied after its answer (the send
   * waits for them otherwise, as a campaign delivery does, so its job ends with them done).
   */
  readonly afterAnswer?: AfterAnswer | undefined;
}

export type SendFromAgentResult =
  | {
      readonly ok: true;
      /** Our message ID (`msg_...`). */
      readonly id: string;
      /** The provider's message ID. */
      readonly messageId: string;
      readonly conversationId: string | null;
      readonly endUserId: string | null;
      /** A new conversation was opened by this send. */
      readonly created: boolean;
    }
  | {
      readonly ok: false;
      readonly id: string;
      readonly failure: Extract<ProviderResult, { ok: false }>;
      /** Why, as a sentence for the caller. */
      readonly sentence: string;
      readonly conversationId: string | null;
      readonly endUserId: string | null;
    };

export const conversationDeps = (ctx: AppContext): ConversationDeps => ({
  db: ctx.db,
  jobs: ctx.jobs,
  clock: ctx.clock,
  idleMs: ctx.config.conversations.idleMs,
});

/** The row of a message about to be sent: pending, with no provider ID yet. */
export function messageRow(
  input: SendFromAgentInput,
  id: string,
  numberId: string,
  conversationId: string | null,
  now: number,
): MessageTable {
  const { content } = input;
  return {
    id,
    org_id: input.orgId,
    agent_id: input.agentId,
    number_id: numberId,
    to_phone: input.to,
    type: content.kind === 'text' ? 'message' : 'template',
    template_name: content.kind === 'template' ? content.name : null,
    provider_message_id: null,
    status: 'pending',
    status_rank: STATUS_RANK.pending,
    error_code: null,
    error_message: null,
    created_at: now,
    updated_at: now,
    conversation_id: conversationId,
    text: content.kind === 'text' ? content.text : null,
    template_language: content.kind === 'template' ? content.language : null,
    template_parameters:
      content.kind === 'template' && (content.body.length > 0 || content.header.length > 0)
        ? JSON.stringify({ body: content.body, header: content.header })
        : null,
  };
}

/**
 * Whether the recipient read may store the message too (PostgreSQL, a template from a cached key):
 * the key's epoch and the agent's number, both from memory and both current under that epoch. The
 * statement then stores the message only if the database's epoch is still that one, so a key
 * revoked or a number changed meanwhile (on any node) stores nothing, and the send goes on as any
 * other: the key is authenticated again, the number read again.
 */
async function storesWithRecipient(
  ctx: AppContext,
  input: SendFromAgentInput,
): Promise<{ epoch: number; sender: Sender & { numberId: string } } | undefined> {
  const epoch = input.confirmKey?.used;
  if (ctx.database.dialect !== 'postgres' || input.content.kind !== 'template' || epoch === undefined) return undefined;
  const cache = keyCacheOf(ctx.database);
  if (cache.current !== epoch) return undefined;
  const sender = await senderOf(ctx, input.orgId, input.agentId);
  // Read under another epoch meanwhile (another request saw it move): not this path.
  if (!sender?.numberId || !sender.phoneNumberId || cache.current !== epoch) return undefined;
  return { epoch, sender: { ...sender, numberId: sender.numberId } };
}

/**
 * Sends from the messaging number of an agent: the agent and its number (404, 400), the 24-hour
 * window for free text (400), the recipient's end user and conversation (found or made), then the
 * provider, once. The message is stored before the provider is called, so a status webhook can
 * never outrun it. What a send that failed for certain made (a conversation, an end user) is undone;
 * after an acceptance the conversation moves on and, when it is new, `conversation.started` is
 * raised. Never retried here: the result says how the provider answered.
 */
export async function sendFromAgent(ctx: AppContext, input: SendFromAgentInput): Promise<SendFromAgentResult> {
  const { orgId, agentId, to, content } = input;
  const wanted = input.conversation;
  const phone = endUserPhoneOf(to);
  const id = input.messageId ?? newId('msg');
  const now = ctx.clock.now();
  const deps = conversationDeps(ctx);
  // Most sends go to someone already known, in an open conversation: one read finds both, and the
  // key epoch that confirms a cached key, before anything else. On PostgreSQL that read also
  // stores the message (a template) when the conversation is live and both the cached key and the
  // agent's cached number are still current: one round trip less (see storesWithRecipient).
  const early = phone ? await storesWithRecipient(ctx, input) : undefined;
  const recipient = !phone
    ? undefined
    : early
      ? await findRecipientStoringMessage(ctx.db, {
          orgId,
          agentId,
          phone,
          epoch: early.epoch,
          liveSince: now - deps.idleMs,
          message: messageRow(input, id, early.sender.numberId, null, now),
        })
      : { ...(await findRecipient(ctx.db, orgId, agentId, phone)), stored: false };
  await input.confirmKey?.(recipient?.epoch);
  const known = recipient?.known;

  const sender = recipient?.stored && early ? early.sender : await senderOf(ctx, orgId, agentId);
  if (!sender) throw new AppError('NOT_FOUND', `No agent with ID '${clip(agentId, 64)}' in this organization.`);
  if (!sender.numberId || !sender.phoneNumberId) {
    throw new AppError(
      'INVALID_BODY',
      `Agent '${clip(agentId, 64)}' has no messaging number assigned, so it cannot send messages.`,
    );
  }
  const { numberId, accessToken } = sender;

  if (content.kind === 'text' && !(await isWindowOpen(ctx.db, numberId, windowKey(to), now))) {
    throw new AppError(
      'INVALID_BODY',
      `${to} has not written to this agent's number in the last 24 hours, so free text cannot be sent; use type 'template' with an approved template.`,
    );
  }

  if (!phone && wanted.required) {
    throw new AppError('INVALID_BODY', `'to' (${to}) is not a phone number an end user can have.`);
  }
  const endUser = !phone
    ? undefined
    : known
      ? { ...known.endUser, phone, created: false }
      : await findOrCreateEndUserByPhone(ctx.db, ctx.clock, {
          orgId,
          phone,
          origin: wanted.origin,
          fields: wanted.endUser,
        });
  const live = known?.open && now - Number(known.open.last_message_at) <= deps.idleMs ? known.open : undefined;
  // The statement stored the message only with a live conversation, by the same test.
  if (recipient?.stored && !live) throw new Error('a message was stored with a conversation that is not live');
  const opened = live
    ? { row: live, created: false }
    : endUser
      ? await openConversation(deps, {
          orgId,
          agentId,
          endUserId: endUser.id,
          triggerId: wanted.triggerId ?? null,
          campaignId: wanted.campaignId ?? null,
          context: wanted.context ?? null,
          at: now,
        })
      : undefined;
  const conversationId = opened?.row.id ?? null;

  const send: ProviderSend = {
    phoneNumberId: sender.phoneNumberId,
    accessToken,
    to,
    content,
    callbackData: id,
  };
  if (!recipient?.stored) await insertMessage(ctx.db, messageRow(input, id, numberId, conversationId, now));

  const result = await ctx.messaging.provider.send(send);
  // Counted against the number's pace (in this process at once, across nodes shortly after).
  if (!input.paced) void ctx.numberPacer.note(numberId);
  const at = ctx.clock.now();
  // From here on the provider has answered: bookkeeping that fails is logged, never the caller's
  // answer (the stored message and its callback data still let later statuses find it).
  const record = async (what: string, write: () => Promise<unknown>) => {
    try {
      await write();
    } catch (err) {
      ctx.logger.error(
        { err, messageId: send.callbackData, providerMessageId: result.ok ? result.messageId : undefined },
        `the provider answered a send, but recording ${what} failed`,
      );
    }
  };
  if (!result.ok) {
    const sentence = failureSentence(result, send);
    const certain = result.kind !== 'unknown';
    await record('the failure', () =>
      markSendFailed(
        ctx.db,
        send.callbackData,
        result.kind === 'rejected' || result.kind === 'throttled' ? 'rejected' : 'unconfirmed',
        result.code,
        sentence,
        at,
      ),
    );
    // Nothing went out: what this send made for its recipient is undone (an unknown outcome keeps it).
    if (certain && opened?.created) await record('the undo', () => deleteUnstartedConversation(ctx.db, opened.row.id));
    if (certain && endUser?.created && opened?.created) {
      await record('the undo', () => deleteEndUserMadeForSend(ctx.db, orgId, endUser.id));
    }
    const kept = !certain || !opened?.created;
    return {
      ok: false,
      id: send.callbackData,
      failure: result,
      sentence,
      conversationId: kept ? conversationId : null,
      endUserId: kept || !endUser?.created ? (endUser?.id ?? null) : null,
    };
  }
  const events = { db: ctx.db, jobs: ctx.jobs, clock: ctx.clock };
  let accepted = false;
  await record('the acceptance', async () => {
    await recordAcceptance(ctx.db, {
      id: send.callbackData,
      providerMessageId: result.messageId,
      at,
      conversation: opened ? { id: opened.row.id, now } : null,
    });
    if (opened?.created && endUser) {
      await emitConversationStarted(events, opened.row, {
        endUser: { id: endUser.id, name: endUser.name, phone: endUser.phone, email: endUser.email },
        messageId: result.messageId,
        at,
      });
    }
    accepted = true;
  });
  // Statuses that outran the message (a webhook without our callback data, stored as pending
  // before the message had its provider ID): read only once the acceptance is committed, as a
  // status webhook stores one and then looks for the message again. Told after
  // conversation.started. Nothing in the answer depends on them, so an API request answers first.
  const outran = async () => {
    const applied = await applyPendingStatuses(ctx.db, send.callbackData, result.messageId, send.phoneNumberId);
    await raiseMessageStatuses(events, send.callbackData, result.messageId, applied);
  };
  if (accepted) {
    if (input.afterAnswer) {
      input.afterAnswer.run('applying the statuses that outran a send', outran, {
        messageId: send.callbackData,
        providerMessageId: result.messageId,
      });
    } else {
      await record('the statuses that outran it', outran);
    }
  }
  return {
    ok: true,
    id: send.callbackData,
    messageId: result.messageId,
    conversationId,
    endUserId: endUser?.id ?? null,
    created: opened?.created ?? false,
  };
}

/** The sentence of a send that did not go through, or whose outcome is unknown. */
function failureSentence(result: Extract<ProviderResult, { ok: false }>, send: ProviderSend): string {
  switch (result.kind) {
    case 'rejected':
    case 'throttled':
      return rejectionSentence(result, send);
    case 'unknown':
      return (
        `The messaging provider's answer is missing (${result.message}), so whether it accepted the message is ` +
        `unknown; it was not retried. GET /api/messages/${send.callbackData} ` +
        "shows the message's status once the provider reports on it; send again (with a new Idempotency-Key) only if it never does."
      );
    case 'config':
      return "The messaging provider refused this number's credentials; an administrator must check its access token.";
    default:
      return `The messaging provider could not be reached or failed (${result.message}); the message was not sent and was not retried.`;
  }
}

/** The AppError a caller of the API gets for a send that did not go through. */
export function sendFailureError(result: Extract<SendFromAgentResult, { ok: false }>): AppError {
  switch (result.failure.kind) {
    case 'rejected':
    case 'throttled':
      return new AppError('PROVIDER_REJECTED', result.sentence);
    case 'unknown':
      return new SendOutcomeUnknown(result.sentence);
    default:
      return new AppError('PROVIDER_UNAVAILABLE', result.sentence);
  }
}
