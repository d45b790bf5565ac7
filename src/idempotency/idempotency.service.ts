import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isConnectionLost, isUniqueViolation } from '../db/db-errors.js';
import { QUICK_WAITS_MS, retrying } from '../db/retry.js';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { randomBase62 } from '../shared/ids.js';
import {
  deleteOlderThan,
  findClaim,
  type IdempotencyRow,
  insertClaim,
  takeOverClaim,
} from './idempotency.repository.js';

/** How long a finished key replays its response; after that the key may be used afresh. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * An in-flight claim older than this belongs to a process that died mid-request (a send gives
 * up on the provider after its timeout, seconds; a live process writes its outcome even through a
 * lost connection or a full disk, idempotency.hook.ts), so it stops blocking the key; a route whose
 * requests can take longer passes a longer expiry (the send: three provider timeouts plus a minute).
 * If that process had already reached the provider, a retry after this point may send a second
 * time: the price of not locking a key for 24 hours after a crash.
 */
export const IDEMPOTENCY_STALE_IN_FLIGHT_MS = 5 * 60 * 1000;

/** RFC 9110 visible characters (VCHAR), at most 255. */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export const INVALID_IDEMPOTENCY_KEY = 'The Idempotency-Key header must be 1 to 255 visible ASCII characters.';

export interface Claim {
  readonly orgId: string;
  readonly key: string;
  readonly createdAt: number;
  /** Random, this claim's own (the row's `claim_token`). */
  readonly token: string;
}

export type ClaimOutcome =
  | { readonly kind: 'claimed'; readonly claim: Claim }
  | { readonly kind: 'replay'; readonly status: number; readonly body: string };

/** Validates the header value; `undefined` when the header is absent. */
export function parseIdempotencyKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KEY_PATTERN.test(value))
    throw new AppError('INVALID_BODY', INVALID_IDEMPOTENCY_KEY);
  return value;
}

/** JSON with object keys sorted at every level, so key order does not change the hash. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * Hash of what the key stands for: the operation, the agent an agent-scoped key is bound to (its
 * sends omit `convId`, so one body means another agent for another agent key), and the
 * canonical body.
 */
export function requestHash(operation: string, body: unknown, boundAgentId: string | null = null): string {
  return createHash('sha256')
    .update(`${operation}\n${boundAgentId ?? ''}\n`)
    .update(canonicalJson(body))
    .digest('hex');
}

/** Deletes keys past their 24 hours; a claim takes an expired row over anyway, this only bounds the table. */
export async function purgeExpiredKeys(db: Kysely<DB>, clock: Clock): Promise<void> {
  await deleteOlderThan(db, clock.now() - IDEMPOTENCY_TTL_MS);
}

/**
 * Claims `key` for one request of `orgId`, never by read-then-write: the INSERT is the claim,
 * and a unique violation means the key exists. Then, in this order:
 *  - expired (older than 24 h) or an abandoned in-flight claim: taken over by compare-and-set;
 *  - another body (hash): 422 IDEMPOTENCY_MISMATCH;
 *  - still in flight: 409 IDEMPOTENCY_IN_FLIGHT;
 *  - done: the stored response, to replay.
 * A claim whose answer was lost with its connection (it may have committed) is read back on a
 * fresh connection: its random token says whether it is this request's. Left unread, a committed
 * claim would block the key until it counts as abandoned, with no request behind it.
 */
export async function claimIdempotencyKey(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; key: string; requestHash: string },
  inFlightExpiryMs = IDEMPOTENCY_STALE_IN_FLIGHT_MS,
): Promise<ClaimOutcome> {
  const claimed = (createdAt: number, token: string): ClaimOutcome => ({
    kind: 'claimed',
    claim: { orgId: input.orgId, key: input.key, createdAt, token },
  });
  /** After a lost answer: the row as it is now, read on a fresh connection (which may throw, a 503). */
  const readBack = () => retrying(() => findClaim(db, input.orgId, input.key), { waitsMs: QUICK_WAITS_MS });
  // A few rounds cover a row released or taken over between our INSERT and our SELECT.
  for (let round = 0; round < 4; round++) {
    const now = clock.now();
    const token = randomBase62(22);
    let row: IdempotencyRow | undefined;
    try {
      await insertClaim(db, { ...input, createdAt: now, claimToken: token });
      return claimed(now, token);
    } catch (err) {
      if (isConnectionLost(err)) {
        row = await readBack();
        if (row?.claim_token === token) return claimed(now, token);
      } else if (!isUniqueViolation(err)) throw err;
    }
    row ??= await findClaim(db, input.orgId, input.key);
    if (!row) continue;
    const expired = row.created_at <= now - IDEMPOTENCY_TTL_MS;
    const abandoned = row.state === 'in_flight' && row.created_at <= now - inFlightExpiryMs;
    if (expired || abandoned) {
      let took: boolean;
      try {
        took = await takeOverClaim(db, row, { requestHash: input.requestHash, createdAt: now, claimToken: token });
      } catch (err) {
        if (!isConnectionLost(err)) throw err;
        took = (await readBack())?.claim_token === token;
      }
      if (took) return claimed(now, token);
      continue;
    }
    if (row.request_hash !== input.requestHash) {
      throw new AppError(
        'IDEMPOTENCY_MISMATCH',
        'This Idempotency-Key was already used with a different request body; use a new key for a new request.',
      );
    }
    if (row.state === 'in_flight' || row.response_status === null || row.response_body === null) break;
    return { kind: 'replay', status: row.response_status, body: row.response_body };
  }
  throw new AppError(
    'IDEMPOTENCY_IN_FLIGHT',
    'A request with this Idempotency-Key is still in progress; retry once it has finished.',
  );
}
