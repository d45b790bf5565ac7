import { findAgent } from '../agents/agent.service.js';
import { type SendDeps, sendFromAgent } from '../channels/index.js';
import { claimAuthor, findConversation, type HoldingTextJob } from '../conversations/index.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { HOLDING_TEXT_QUEUE } from '../jobs/queues.js';
import { publishLive } from '../live/index.js';
import { emitMessageSent } from './message-sent.events.js';
import { derivedMessageId, findEndUser } from './person-send.service.js';

/**
 * Declares the `holding-text` queue: when Parley hands a conversation to people (the agent has no
 * hook, or its hook did not answer in time), the agent's holding text goes to the end user as free
 * text, once per handoff: the message's ID is derived from the handoff and claimed before the send,
 * so a job that runs again sends nothing more (at most once: a send that failed is shown failed in
 * the thread, not repeated). Nothing is sent when the agent has no holding text, or when the
 * conversation has been handed back or closed meanwhile.
 */
export function defineHoldingTextQueue(jobs: JobRunner, deps: SendDeps): void {
  jobs.define<HoldingTextJob>({
    name: HOLDING_TEXT_QUEUE,
    concurrency: 4,
    retryDelaysMs: [1_000, 5_000, 30_000],
    handler: async (job) => {
      const conversation = await findConversation(deps.db, job.orgId, job.conversationId);
      if (
        conversation?.status !== 'open' ||
        conversation.handler !== 'human' ||
        Number(conversation.handoff_at) !== job.handoffAt
      ) {
        return;
      }
      const agent = await findAgent(deps.db, job.orgId, conversation.agent_id);
      const text = agent?.holdingText?.trim();
      if (!agent || !text) return;
      const endUser = await findEndUser(deps, job.orgId, conversation.end_user_id);
      if (!endUser?.phone) return;
      const id = derivedMessageId('holding', conversation.id, String(job.handoffAt));
      const claimed = await claimAuthor(deps.db, {
        message_id: id,
        org_id: job.orgId,
        kind: 'parley',
        user_id: null,
        name: null,
        created_at: deps.clock.now(),
      });
      if (!claimed) return;
      const result = await sendFromAgent(deps, {
        orgId: job.orgId,
        agentId: agent.id,
        to: endUser.phone,
        content: { kind: 'text', text },
        conversation: { origin: 'manual', required: false },
        messageId: id,
      }).catch((err: unknown) => {
        deps.logger.warn({ err, conversationId: conversation.id }, 'the holding text could not be sent');
        return undefined;
      });
      if (!result?.ok) return;
      await emitMessageSent(deps, {
        orgId: job.orgId,
        agentId: agent.id,
        conversationId: conversation.id,
        endUserId: conversation.end_user_id,
        to: endUser.phone,
        id,
        messageId: result.messageId,
        content: { kind: 'text', text },
        sentBy: { type: 'parley' },
        at: deps.clock.now(),
      });
      await publishLive(deps.db, { orgId: job.orgId, conversationIds: [conversation.id], kind: 'message' });
    },
  });
}
