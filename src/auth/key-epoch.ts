import type { WithKeyEpoch } from '../db/by-id-with-key-epoch.js';
import { AppError } from '../shared/errors.js';
import type { KeyCache } from './key-cache.js';

/**
 * The key-epoch protocol, in one place.
 *
 * **What a key epoch is.** A counter in a one-row table (`key_epoch`, migration 0013-key-epoch)
 * that every change able to alter what a key may do (a revocation, a plan change, a deletion, an
 * agent's number: migration 0014-sender-epoch) bumps in the same transaction. The key cache
 * (`key-cache.ts`) trusts an entry only while the epoch is the one it was read under.
 *
 * **How a request admitted on the cache is confirmed.** A route that opts in (`epochInQuery`)
 * may admit a cached key without a statement of its own: the request then carries a
 * `PendingKey`, and the route's first statement reads the epoch beside its data (one snapshot).
 * `confirmKeyEpoch` compares the two: the same epoch confirms the key (and records its use); a
 * moved epoch authenticates the key again from the database, whose 401 or 403 then wins over
 * whatever the route read. Before a write, or an error answer, a key still pending is confirmed
 * by reading the epoch alone (`settleKeyEpoch`).
 *
 * **Fail closed.** A request admitted on the cache whose epoch was never confirmed by the time it
 * answers gets the 401 of a revoked key (`unconfirmedKeyError`), never the answer it would have had.
 *
 * Services see only a `KeyEpochConfirmer` and read through `readConfirmingKey`, the one wrapper.
 */

/** A key admitted from the cache whose epoch a statement of the request must still confirm. */
export interface PendingKey<P> {
  /** The epoch the key was cached under. */
  readonly epoch: number;
  /** Records the use once the key is confirmed ("last used" counts only requests the key opened). */
  readonly touch: () => Promise<void> | undefined;
  /** Authenticates again from the database (the epoch moved): the principal, or the 401/403. */
  readonly again: () => Promise<P>;
}

/** What carries a request's key through the protocol (an HTTP request, in practice). */
export interface KeyHolder<P> {
  principal: P | null;
  keyCheck?: PendingKey<P> | undefined;
}

/**
 * What a read hands the epoch it read: the confirmation of the request's cached key, carrying
 * (`used`) the epoch the key was cached under, which the read must see to confirm it. Called with
 * undefined when nothing was read: the epoch is read then.
 */
export type KeyEpochConfirmer = ((epoch: number | undefined) => Promise<void> | undefined) & { readonly used: number };

/** The 401 of a revoked key (and of a key whose epoch was never confirmed: the same answer). */
export const revokedKeyError = (): AppError => new AppError('UNAUTHORIZED', 'This API key has been revoked.');

/**
 * The key of `holder` confirmed by the epoch `seen` (read by the request's own statement; undefined:
 * none was read, so it is read now), or authenticated again from the database if the epoch moved
 * since the key was cached. Undefined when there is nothing to wait for (the usual case, an epoch
 * read and unchanged, settles in the same turn).
 */
export function confirmKeyEpoch<P>(
  cache: KeyCache<unknown>,
  holder: KeyHolder<P>,
  seen: number | undefined,
): Promise<void> | undefined {
  const check = holder.keyCheck;
  if (!check) return undefined;
  holder.keyCheck = undefined;
  if (seen !== undefined) return confirmWith(cache, holder, check, seen);
  return cache.readEpoch().then((epoch) => confirmWith(cache, holder, check, epoch));
}

function confirmWith<P>(
  cache: KeyCache<unknown>,
  holder: KeyHolder<P>,
  check: PendingKey<P>,
  epoch: number | undefined,
): Promise<void> | undefined {
  if (epoch !== undefined && cache.confirm(check.epoch, epoch)) return check.touch();
  return check.again().then((principal) => {
    holder.principal = principal;
  });
}

/** Confirms the holder's cached key now, if it still awaits it (before a write, or an error answer). */
export function settleKeyEpoch<P>(cache: KeyCache<unknown>, holder: KeyHolder<P>): Promise<void> | undefined {
  return holder.keyCheck ? confirmKeyEpoch(cache, holder, undefined) : undefined;
}

/** The confirmer a route hands its read, if the request's key awaits confirmation. */
export function keyEpochConfirmer<P>(cache: KeyCache<unknown>, holder: KeyHolder<P>): KeyEpochConfirmer | undefined {
  const check = holder.keyCheck;
  if (!check) return undefined;
  return Object.assign((epoch: number | undefined) => confirmKeyEpoch(cache, holder, epoch), { used: check.epoch });
}

/**
 * Fail closed: the 401 a request answers instead when its key, admitted on the cache, was never
 * confirmed (its route forgot to read the epoch); undefined when there is none to answer.
 */
export function unconfirmedKeyError<P>(holder: KeyHolder<P>): AppError | undefined {
  if (!holder.keyCheck) return undefined;
  holder.keyCheck = undefined;
  return revokedKeyError();
}

/**
 * The one wrapper of a read that may confirm a key: without a confirmer, `plain()`; with one,
 * `withEpoch()` (the same read with the key epoch beside it, in one statement) and then the
 * confirmation, before anything is answered, a 404 included. The same statements either way.
 */
export function readConfirmingKey<Row>(
  confirm: KeyEpochConfirmer | undefined,
  plain: () => Promise<Row | undefined>,
  withEpoch: () => Promise<WithKeyEpoch<Row>>,
): Promise<Row | undefined> {
  if (!confirm) return plain();
  // No promise of its own when the epoch is unchanged (the usual case): no extra turn.
  return withEpoch().then(({ row, epoch }) => {
    const confirming = confirm(epoch);
    return confirming ? confirming.then(() => row) : row;
  });
}
