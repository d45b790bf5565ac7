import type { Logger } from 'pino';
import type { JobRunner } from '../jobs/job-runner.js';
import { CONVERSATION_IDLE_SWEEP_QUEUE } from '../jobs/queues.js';
import { type ConversationDeps, closeIdleConversations } from './conversation.service.js';

/**
 * Closes idle conversations every `everyMs` (PARLEY_CONVERSATION_SWEEP_MS): a scheduled job of the
 * job runner, so one node of the region sweeps each interval, not every node. The sweep's UPDATE
 * claims what it closes all the same, so a sweep that outlives its interval and the next one close
 * each conversation once; what it raises (`conversation.closed`) is delivered by the job runner. A
 * conversation is also closed as soon as a new message finds it idle, so a late sweep never joins
 * a message to a stale thread.
 */
export class IdleSweeper {
  constructor(
    private readonly deps: ConversationDeps,
    private readonly everyMs: number,
    private readonly logger: Logger,
  ) {}

  /** Declares the sweep on the job runner (before its `init()`); it runs once the runner starts. */
  define(jobs: JobRunner): void {
    jobs.schedule({ name: CONVERSATION_IDLE_SWEEP_QUEUE, everyMs: this.everyMs, run: () => this.sweep() });
  }

  /** One sweep now. */
  async sweep(): Promise<void> {
    try {
      const closed = await closeIdleConversations(this.deps);
      if (closed > 0) this.logger.info({ closed }, 'closed idle conversations');
    } catch (err) {
      this.logger.error({ err }, 'could not close idle conversations');
    }
  }
}
