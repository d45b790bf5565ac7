import type { Kysely } from 'kysely';
import { isRetryableWrite, isUniqueViolation } from '../db/db-errors.js';
import type { DB } from '../db/schema.js';
import type { InboundEventFields } from '../messaging/index.js';
import { emitConversationStarted, emitMessageReceived, type StartedEndUser } from './conversation.events.js';
import { findConversation, touchConversation } from './conversation.fast.js';
import { agentsOfNumber, agentWithOpenConversation, setInboundConversation } from './conversation.repository.js';
import { type ConversationDeps, openConversation } from './conversation.service.js';

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
 * unless the file was settled first). Idempotent: an attempt that runs again finds the
 * conversation set and raises the same event IDs. Resolves with the conversation, if any.
 */
export async function joinInbound(deps: ConversationDeps, message: InboundOfNumber): Promise<string | undefined> {
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
          });
        }
        return conversation.id;
      });
      return id;
    } catch (err) {
      // Two messages of one user at once may race to open the conversation: run again to join it.
      if (attempt >= 5 || !(isUniqueViolation(err) || isRetryableWrite(err))) throw err;
    }
  }
}
