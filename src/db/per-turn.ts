/**
 * Calls made in one turn of the event loop, run together just after that turn (`setImmediate`):
 * under load, the calls of many requests become one statement, one round trip and one commit
 * instead of one each. Each caller's promise settles with its own outcome once the batch has run.
 * One call alone in its turn (no load) runs as `one`, so it costs what it did without batching
 * but a tick. If a batch of several fails, each of its calls runs again alone, so a call fails only
 * for a reason of its own (a batch that fails has written nothing: it is one statement).
 */
export class PerTurn<I, O> {
  private queue: { item: I; resolve: (out: O) => void; reject: (err: unknown) => void }[] = [];
  private scheduled = false;

  constructor(
    /** Runs one call alone. */
    private readonly one: (item: I) => Promise<O>,
    /** Runs several calls as one; answers their outcomes in the same order. */
    private readonly many: (items: readonly I[]) => Promise<readonly O[]>,
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    this.scheduled = false;
    const alone = (b: (typeof batch)[number]) => this.one(b.item).then(b.resolve, b.reject);
    const [first] = batch;
    if (batch.length === 1 && first) {
      void alone(first);
      return;
    }
    this.many(batch.map((b) => b.item)).then(
      (outs) => {
        if (outs.length === batch.length) for (const [i, b] of batch.entries()) b.resolve(outs[i] as O);
        else for (const b of batch) b.reject(new Error(`a batch of ${batch.length} answered ${outs.length}`));
      },
      () => {
        for (const b of batch) void alone(b);
      },
    );
  }
}
