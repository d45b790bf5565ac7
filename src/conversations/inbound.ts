import type { Kysely } from 'kysely';
import { isRetryableWrite, isUniqueViolation } from '../db/db-errors.js';
import type { DB } from '../db/schema.js';
import { agentHookReceives, eventId } from '../events/event.service.js';
import { BOT_FALLBACK_QUEUE } from '../jobs/queues.js';
import { publishLive } from '../live/index.js';
import type { InboundEventFields } from '../messaging/index.js';
import type { BotFallbackJob } from './bot-fallback.task.js';
import { emitConversationStarted, emitMessageReceived, type StartedEndUser } from './conversation.events.js';
import { findConversation, touchConversation } from './conversation.fast.js';
import { agentsOfNumber, agentWithOpenConversation, setInboundConversation } from './conversation.repository.js';
import { type ConversationDeps, openConversation } from './conversation.service.js';
import type { ConversationTable } from './conversation.tables.js';
import { markWaiting } from './handling.repository.js';
import { handOffRow } from './handoff.service.js';

/** Joining an inbound message: a conversation's verbs, and how long the agent's hook has to acknowledge it. */
export interface InboundJoinDeps extends ConversationDeps {
  /** PARLEY_BOT_FALLBACK_MS. */
  readonly botFallbackMs: number;
}

export interface InboundOfNumber {
  readonly orgId: string;
  readonly numberId: string;
  readonly providerMessageId: string;
  /** E.164 of the sender, as the provider reports it. */
  readonly from: string;
  readonly endUser: StartedEndUser;
  /**
   * What `message.received` says of the message, read in the transaction that joins it; null while
   * it cannot be raised yet (its file is still downloading: the download raises it once done).
   */
  readonly fields: (db: Kysely<DB>) => Promise<InboundEventFields | null>;
  /** When the user sent it (ms). */
  readonly sentAt: number;
  /** The conversation an earlier attempt already joined the message to. */
  readonly conversationId: string | null;
}

/**
 * Joins an inbound message to its conversation and tells the agent: the agent is the one of the
 * number's agents with an open conversation with this end user (the most recently active), else
 * the number's first agent; a number with no agent keeps the message out of any conversation. In
 * one transaction: the conversation opened (and `conversation.started`) or joined, the message's
 * conversation set, `message.received` raised (for a message with a file, by its download instead,
 * unless the file was settled first), open inbox pages told. Idempotent: an attempt that runs
 * again finds the conversation set and raises the same event IDs. Resolves with the conversation,
 * if any.
 *
 * Who hears it: while people hold the conversation, only the organization's endpoints (the agent's
 * hook stays silent) and the end user now waits for a person. While the bot holds it, an agent
 * with no hook of its own hands it to people at once (`no_bot`); otherwise a check is queued that
 * hands it over if the hook has not acknowledged the message within `botFallbackMs`.
 */
export async function joinInbound(deps: InboundJoinDeps, message: InboundOfNumber): Promise<string | undefined> {
  const agents = await agentsOfNumber(deps.db, message.orgId, message.numberId);
  if (agents.length === 0) return undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      const id = await deps.db.transaction().execute(async (trx) => {
        const tx = { ...deps, db: trx };
        const earlier = message.conversationId
          ? await findConversation(trx, message.orgId, message.conversationId)
          : undefined;
        let conversation = earlier;
        let created = false;
        if (!conversation) {
          const agentId =
            (await agentWithOpenConversation(trx, message.orgId, agents, message.endUser.id)) ?? (agents[0] as string);
          const opened = await openConversation(tx, {
            orgId: message.orgId,
            agentId,
            endUserId: message.endUser.id,
            at: message.sentAt,
          });
          conversation = opened.row;
          created = opened.created;
          await setInboundConversation(trx, message.providerMessageId, conversation.id);
        }
        const now = deps.clock.now();
        await touchConversation(trx, conversation.id, message.sentAt, now);
        if (created) {
          await emitConversationStarted(tx, conversation, {
            endUser: message.endUser,
            messageId: message.providerMessageId,
            at: now,
          });
        }
        const withPeople = conversation.handler === 'human' && conversation.status === 'open';
        // Read after the message's row was updated above (its lock held, on PostgreSQL), so that a
        // download finishing at the same moment either sees this conversation or is seen here.
        const fields = await message.fields(trx);
        if (fields) {
          await emitMessageReceived(tx, {
            orgId: message.orgId,
            agentId: conversation.agent_id,
            conversationId: conversation.id,
            endUserId: message.endUser.id,
            from: message.from,
            messageId: message.providerMessageId,
            fields,
            at: message.sentAt,
            ...(withPeople ? { toAgentHook: false } : {}),
          });
        }
        if (withPeople) {
          await markWaiting(trx, conversation.id, now);
        } else if (conversation.status === 'open') {
          await fallBack(tx, conversation, message.providerMessageId);
        }
        await publishLive(trx, { orgId: message.orgId, conversationIds: [conversation.id], kind: 'message' });
        return conversation.id;
      });
      return id;
    } catch (err) {
      // Two messages of one user at once may race to open the conversation: run again to join it.
      if (attempt >= 5 || !(isUniqueViolation(err) || isRetryableWrite(err))) throw err;
    }
  }
}

/**
 * The bot holds the conversation: with no hook of the agent's to hear the message, people take it
 * now (`no_bot`); otherwise the hook has `botFallbackMs` to acknowledge it (bot-fallback.task.ts).
 */
async function fallBack(deps: InboundJoinDeps, conversation: ConversationTable, providerMessageId: string) {
  const { db } = deps;
  if (!(await agentHookReceives(db, conversation.org_id, conversation.agent_id, 'message.received'))) {
    await handOffRow(deps, conversation, {
      reason: 'no_bot',
      by: { type: 'parley' },
      eventKey: `no_bot\u0000${providerMessageId}`,
    });
    return;
  }
  await deps.jobs.enqueue<BotFallbackJob>(
    BOT_FALLBACK_QUEUE,
    {
      orgId: conversation.org_id,
      conversationId: conversation.id,
      agentId: conversation.agent_id,
      eventId: eventId('message.received', providerMessageId),
      providerMessageId,
    },
    { db, delayMs: deps.botFallbackMs },
  );
}
