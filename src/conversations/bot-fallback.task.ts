import { agentHookAcknowledged } from '../events/event.service.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { BOT_FALLBACK_QUEUE } from '../jobs/queues.js';
import { findConversation } from './conversation.fast.js';
import type { ConversationDeps } from './conversation.service.js';
import { handOffRow } from './handoff.service.js';

/** A `message.received` for the agent's hook, to check once PARLEY_BOT_FALLBACK_MS has passed. */
export interface BotFallbackJob {
  readonly orgId: string;
  readonly conversationId: string;
  readonly agentId: string;
  /** The event whose acknowledgement is awaited. */
  readonly eventId: string;
  readonly providerMessageId: string;
}

/**
 * Declares the `bot-fallback` queue: a job runs PARLEY_BOT_FALLBACK_MS after an end user's message
 * while the bot held the conversation. If the agent's hook has not acknowledged it (answered 2xx)
 * by then and the bot still holds the conversation, Parley hands it to people
 * (`bot_unreachable`); the delivery itself keeps being retried as any. Idempotent: a handoff
 * already made (by this job or anyone) is left alone, and its event ID comes from the message.
 */
export function defineBotFallbackQueue(jobs: JobRunner, deps: ConversationDeps): void {
  jobs.define<BotFallbackJob>({
    name: BOT_FALLBACK_QUEUE,
    concurrency: 4,
    retryDelaysMs: [1_000, 5_000, 30_000],
    handler: async (job) => {
      if (await agentHookAcknowledged(deps.db, job.orgId, job.eventId, job.agentId)) return;
      const row = await findConversation(deps.db, job.orgId, job.conversationId);
      if (row?.status !== 'open' || row.handler === 'human') return;
      await handOffRow(deps, row, {
        reason: 'bot_unreachable',
        by: { type: 'parley' },
        eventKey: `bot_unreachable\u0000${job.providerMessageId}`,
      });
    },
  });
}
