import type { Logger } from 'pino';

/**
 * Work a request starts but does not make its caller wait for: it runs at once, beside the answer
 * on its way out. A failure is logged, never thrown to anyone. `idle()` waits until none is left;
 * the server waits for it before it closes its database (after its last request is answered), so a
 * graceful stop finishes this work too.
 */
export class AfterAnswer {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly logger: Logger) {}

  /** Starts `work` now; `what` names it in the log line of a failure. */
  run(what: string, work: () => Promise<unknown>, fields: Record<string, unknown> = {}): void {
    const done = (async () => {
      try {
        await work();
      } catch (err) {
        this.logger.error({ err, ...fields }, `${what} failed after the answer`);
      }
    })();
    this.running.add(done);
    void done.finally(() => this.running.delete(done));
  }

  /** How many are still running. */
  get size(): number {
    return this.running.size;
  }

  /** Resolves once nothing is left, including work started meanwhile. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
