import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { inboundMessageStored } from './inbound-message.repository.js';

/** How often a caller waiting for an inbound message looks whether another node applied it. */
const INBOUND_POLL_MS = 200;

/** What became of the inbound message a caller waits for (the sandbox helper). */
export type InboundOutcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'failed' | 'unknown number' | 'timeout'; readonly retrying: boolean };

/**
 * Callers waiting for an inbound message to be applied (the sandbox helper): told by this
 * process when it applies the message (or could not), and looking at the database meanwhile in
 * case another node applied it.
 */
export class InboundWaiters {
  private readonly waiters = new Map<string, (outcome: InboundOutcome) => void>();

  constructor(private readonly db: Kysely<DB>) {}

  /**
   * Resolves once the inbound message `providerMessageId` has been applied (here, or by another
   * node: the database is looked at too), or could not be (its first attempt failed, or its number
   * is unknown), or after `timeoutMs`. Register before the webhook can arrive.
   */
  wait(providerMessageId: string, timeoutMs: number): Promise<InboundOutcome> {
    return new Promise((resolve) => {
      let settled = false;
      const finish = (outcome: InboundOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearInterval(poll);
        this.waiters.delete(providerMessageId);
        resolve(outcome);
      };
      const timer = setTimeout(() => finish({ ok: false, reason: 'timeout', retrying: false }), timeoutMs);
      const poll = setInterval(() => {
        inboundMessageStored(this.db, providerMessageId)
          .then((stored) => stored && finish({ ok: true }))
          .catch(() => undefined);
      }, INBOUND_POLL_MS);
      this.waiters.set(providerMessageId, finish);
    });
  }

  /** Tells whoever waits for this message what became of it. */
  notify(providerMessageId: string, outcome: InboundOutcome): void {
    this.waiters.get(providerMessageId)?.(outcome);
  }
}
