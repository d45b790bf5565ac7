import type { Logger } from 'pino';
import { type ConversationDeps, closeIdleConversations } from './conversation.service.js';

/**
 * Closes idle conversations every `everyMs` on each node that works jobs. The sweep's UPDATE
 * claims what it closes, so nodes sweeping at once close each conversation once; what it raises
 * (`conversation.closed`) is delivered by the job runner. A conversation is also closed as soon as
 * a new message finds it idle, so a late sweep never joins a message to a stale thread.
 */
export class IdleSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: ConversationDeps,
    private readonly everyMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.sweep().finally(() => {
        this.running = undefined;
      });
    }, this.everyMs);
    this.timer.unref();
  }

  /** One sweep now; resolves with how many conversations it closed. */
  async sweep(): Promise<void> {
    try {
      const closed = await closeIdleConversations(this.deps);
      if (closed > 0) this.logger.info({ closed }, 'closed idle conversations');
    } catch (err) {
      this.logger.error({ err }, 'could not close idle conversations');
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
