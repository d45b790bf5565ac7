import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { KeyEpochConfirmer } from '../auth/index.js';
import { type ConversationDeps, openConversation } from '../conversations/conversation.service.js';
import { findRecipient, findRecipientStoringMessage } from '../conversations/index.js';
import type { Database } from '../db/database.js';
import type { DB } from '../db/schema.js';
import { type EndUserFields, findOrCreateEndUserByPhone } from '../end-users/index.js';
import type { JobRunner } from '../jobs/job-runner.js';
import type { ProviderResult, ProviderSend } from '../messaging/index.js';
import {
  insertMessage,
  insertMessageContent,
  isWindowOpen,
  type OutboundContent,
  STATUS_RANK,
} from '../messaging/index.js';
import type { MessageTable } from '../messaging/messaging.tables.js';
import type { AfterAnswer } from '../shared/after-answer.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { endUserPhoneOf, windowKey } from '../shared/phone.js';
import { recordSendAccepted, recordSendFailed } from './after-send.js';
import { failureSentence } from './send-outcome.js';
import { checkSendCatalogue, refuseOptedOut } from './send-policies.js';
import { closedWindowSentence, noNumberSentence, unknownAgentSentence } from './send-sentences.js';
import { senderOf, storesWithRecipient } from './sender.js';

export { recordAcceptance } from './send.fast.js';
export { rejectionSentence, SendOutcomeUnknown, sendFailureError } from './send-outcome.js';

/**
 * What a send from an agent's number uses, and nothing more: the members of the application's
 * context it reads (the context satisfies it as it is; a campaign's deliverer is given it).
 */
export interface SendDeps {
  readonly database: Database;
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly jobs: JobRunner;
  readonly config: {
    readonly conversations: { readonly idleMs: number };
    readonly policies?: { readonly optOutStrict: boolean };
  };
  readonly messaging: {
    readonly provider: { send(input: ProviderSend): Promise<ProviderResult> };
    readonly secrets: { open(sealed: string): string };
  };
  /** Paces each number's campaign sends; an interactive send is counted against it. */
  readonly numberPacer: { note(numberId: string): Promise<void> };
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
   * The request's key was admitted from the cache and awaits the key epoch (src/auth/key-epoch.ts):
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
  /**
   * A rich send (a file, buttons, a list, a quote, a template's header file): what it carries,
   * stored beside the message, and, when a file of Parley's must first reach the provider, `wire`
   * gives the content to send once the sending number is known (before anything is stored).
   */
  readonly rich?: RichSend | undefined;
}

export interface RichSend {
  readonly content: OutboundContent;
  readonly wire?: (sender: {
    readonly numberId: string;
    readonly phoneNumberId: string;
    readonly accessToken: string;
  }) => Promise<ProviderSend['content']>;
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

export const conversationDeps = (ctx: Pick<SendDeps, 'db' | 'jobs' | 'clock' | 'config'>): ConversationDeps => ({
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
 * Sends from the messaging number of an agent: the agent and its number (404, 400), the 24-hour
 * window for free text (400), the recipient's end user and conversation (found or made), then the
 * provider, once. The message is stored before the provider is called, so a status webhook can
 * never outrun it. What a send that failed for certain made (a conversation, an end user) is undone;
 * after an acceptance the conversation moves on and, when it is new, `conversation.started` is
 * raised. Never retried here: the result says how the provider answered.
 */
export async function sendFromAgent(ctx: SendDeps, input: SendFromAgentInput): Promise<SendFromAgentResult> {
  const { orgId, agentId, to, content } = input;
  const wanted = input.conversation;
  const phone = endUserPhoneOf(to);
  const id = input.messageId ?? newId('msg');
  const now = ctx.clock.now();
  const deps = conversationDeps(ctx);
  // The template catalogue, before anything is stored or sent (the recipient's consent comes with
  // the recipient read below).
  const checked = await checkSendCatalogue(ctx, input);
  // Most sends go to someone already known, in an open conversation: one read finds both, and the
  // key epoch that confirms a cached key, before anything else. On PostgreSQL that read also
  // stores the message (a template) when the conversation is live and both the cached key and the
  // agent's cached number are still current: one round trip less (see storesWithRecipient).
  const early = phone && !input.rich ? await storesWithRecipient(ctx, input) : undefined;
  const recipient = !phone
    ? undefined
    : early
      ? await findRecipientStoringMessage(ctx.db, {
          orgId,
          agentId,
          phone,
          epoch: early.epoch,
          liveSince: now - deps.idleMs,
          consentGuard: checked?.consentApplies === true,
          message: messageRow(input, id, early.sender.numberId, null, now),
        })
      : { ...(await findRecipient(ctx.db, orgId, agentId, phone)), stored: false };
  await input.confirmKey?.(recipient?.epoch);
  // The catalogue changed since it was checked (on any node): checked again, before anything is
  // stored. (A message stored by the recipient read was stored under the very epoch checked.)
  const rechecked =
    checked && recipient && !recipient.stored && recipient.epoch !== checked.epoch
      ? await checkSendCatalogue(ctx, input, recipient.epoch)
      : checked;
  const known = recipient?.known;
  // A marketing template (any, when opt-out is strict) to an end user who opted out: refused, and
  // nothing was stored (the storing read left such a message out by the same rule).
  if (rechecked?.consentApplies) refuseOptedOut(ctx, input, known?.consent);

  const sender = recipient?.stored && early ? early.sender : await senderOf(ctx, orgId, agentId);
  if (!sender) throw new AppError('NOT_FOUND', unknownAgentSentence(agentId));
  if (!sender.numberId || !sender.phoneNumberId) throw new AppError('INVALID_BODY', noNumberSentence(agentId));
  const { numberId, accessToken } = sender;

  if (content.kind === 'text' && !(await isWindowOpen(ctx.db, numberId, windowKey(to), now))) {
    throw new AppError('INVALID_BODY', closedWindowSentence(to));
  }

  // A file of Parley's reaches the provider first: an upload that fails leaves nothing behind.
  const sent = input.rich?.wire
    ? await input.rich.wire({ numberId, phoneNumberId: sender.phoneNumberId, accessToken })
    : content;

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
    content: sent,
    callbackData: id,
  };
  if (!recipient?.stored) await insertMessage(ctx.db, messageRow(input, id, numberId, conversationId, now));
  if (input.rich) await insertMessageContent(ctx.db, { messageId: id, orgId, content: input.rich.content });

  const result = await ctx.messaging.provider.send(send);
  // Counted against the number's pace (in this process at once, across nodes shortly after).
  if (!input.paced) void ctx.numberPacer.note(numberId);
  const at = ctx.clock.now();
  // From here on the provider has answered: what fails to be recorded is logged, not answered.
  const answered = {
    id: send.callbackData,
    providerMessageId: result.ok ? result.messageId : undefined,
    phoneNumberId: send.phoneNumberId,
    at,
  };
  if (!result.ok) {
    const sentence = failureSentence(result, send);
    const kept = await recordSendFailed(ctx, answered, result, sentence, { orgId, opened, endUser });
    return {
      ok: false,
      id: send.callbackData,
      failure: result,
      sentence,
      conversationId: kept.keptConversation ? conversationId : null,
      endUserId: kept.keptEndUser ? (endUser?.id ?? null) : null,
    };
  }
  await recordSendAccepted(
    ctx,
    { ...answered, providerMessageId: result.messageId },
    { now, opened, endUser },
    input.afterAnswer,
  );
  return {
    ok: true,
    id: send.callbackData,
    messageId: result.messageId,
    conversationId,
    endUserId: endUser?.id ?? null,
    created: opened?.created ?? false,
  };
}
