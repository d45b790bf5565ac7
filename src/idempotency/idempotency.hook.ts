import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest, onSendHookHandler, preHandlerHookHandler } from 'fastify';
import type { AppContext } from '../context.js';
import { laterWritesOf } from '../db/later-writes.js';
import { principalOf, settleKeyEpoch } from '../http/auth.js';
import { completeClaim, releaseClaim } from './idempotency.repository.js';
import {
  type Claim,
  claimIdempotencyKey,
  IDEMPOTENCY_STALE_IN_FLIGHT_MS,
  parseIdempotencyKey,
  purgeExpiredKeys,
  requestHash,
} from './idempotency.service.js';

/**
 * `Idempotency-Key` on a route, as two hooks around its handler:
 *
 *   const idem = idempotency(ctx, 'POST /api/channels/send');
 *   app.post(path, { onRequest: [...], preHandler: idem.preHandler, onSend: idem.onSend, ... }, handler)
 *
 * `preHandler` (after authentication and body validation) claims the key or answers the stored
 * response with `Idempotent-Replayed: true`, so the handler does not run again. `onSend` stores
 * what the handler answered before it reaches the caller, so an immediate retry replays it.
 *
 * Stored outcomes: every 2xx and 4xx the handler answers (a provider rejection, a 403 for another
 * agent, a 404: the same body would be answered the same again), and a 5xx the handler marks with
 * `keepFailure()` (a send whose outcome is unknown: a retry with the key must not send again). Any
 * other 5xx (provider unreachable, internal error) is not stored: the claim is released so the
 * caller may retry with the same key. Requests refused before the handler (401, 403 of the key's
 * permissions, 429, a body that breaks the schema, a bad Idempotency-Key) never claim the key.
 */
export interface IdempotencyHooks {
  readonly preHandler: preHandlerHookHandler;
  readonly onSend: onSendHookHandler;
  /** Keeps this request's 5xx answer under its key (instead of releasing the key). */
  keepFailure(request: FastifyRequest): void;
}

export interface IdempotencyOptions {
  /**
   * How long an in-flight claim blocks its key before it counts as abandoned (its process died).
   * Must exceed the longest a request can take, or a retry could take the key over and send twice.
   */
  readonly inFlightExpiryMs?: number;
}

export const REPLAYED_HEADER = 'idempotent-replayed';

/** How often a process deletes expired keys (on the next keyed request, so no timer to stop). */
const PURGE_EVERY_MS = 10 * 60 * 1000;

export function idempotency(
  ctx: Pick<AppContext, 'db' | 'clock' | 'logger' | 'database'>,
  operation: string,
  options: IdempotencyOptions = {},
): IdempotencyHooks {
  const claims = new WeakMap<FastifyRequest, Claim>();
  const keep = new WeakSet<FastifyRequest>();
  const inFlightExpiryMs = Math.max(options.inFlightExpiryMs ?? 0, IDEMPOTENCY_STALE_IN_FLIGHT_MS);
  let lastPurge = Number.NEGATIVE_INFINITY;
  const later = laterWritesOf(ctx);

  async function idempotencyPreHandler(request: FastifyRequest, reply: FastifyReply) {
    const key = parseIdempotencyKey(request.headers['idempotency-key']);
    if (key === undefined) return;
    // The claim is a write: a key admitted from the cache is confirmed first.
    await settleKeyEpoch(ctx, request);
    const principal = principalOf(request);
    const now = ctx.clock.now();
    if (now - lastPurge >= PURGE_EVERY_MS) {
      lastPurge = now;
      await purgeExpiredKeys(ctx.db, ctx.clock);
    }
    const outcome = await claimIdempotencyKey(
      ctx.db,
      ctx.clock,
      {
        orgId: principal.orgId,
        key,
        requestHash: requestHash(
          operation,
          request.body,
          // A key bound to an agent or a campaign: its bound target is part of the request.
          principal.scope === 'agent'
            ? principal.agentId
            : principal.scope === 'campaign'
              ? principal.campaignId
              : null,
        ),
      },
      inFlightExpiryMs,
    );
    if (outcome.kind === 'claimed') {
      claims.set(request, outcome.claim);
      return;
    }
    reply
      .code(outcome.status)
      .header('content-type', 'application/json; charset=utf-8')
      .header(REPLAYED_HEADER, 'true');
    return reply.send(outcome.body);
  }

  async function idempotencyOnSend(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const claim = claims.get(request);
    if (!claim) return payload;
    claims.delete(request);
    const outcome =
      (reply.statusCode < 500 || keep.has(request)) && typeof payload === 'string'
        ? { status: reply.statusCode, body: payload }
        : undefined;
    // Before the answer goes out, so that a retry the caller makes on hearing it finds the key done
    // (or free). Until it is written the key answers 409, and only once the claim counts as
    // abandoned may it be used again: the wait that keeps a send of a process that died mid-request
    // from going out twice (nobody can know whether it reached the provider). This process knows,
    // so a write a passing fault refuses (a lost connection, a restart, a full disk) is tried again
    // (later-writes.ts) until the claim would count as abandoned anyway. It is a compare-and-set on
    // this claim: repeating one that did commit, or writing after a takeover, changes nothing.
    await later.run(
      'recording the outcome of an idempotent request',
      () => (outcome ? completeClaim(ctx.db, claim, outcome) : releaseClaim(ctx.db, claim)),
      { until: claim.createdAt + inFlightExpiryMs, log: request.log, context: { orgId: claim.orgId } },
    );
    return payload;
  }

  return {
    preHandler: idempotencyPreHandler,
    onSend: idempotencyOnSend,
    keepFailure: (request) => {
      keep.add(request);
    },
  };
}

/** The request header, for a route's `schema.headers`. */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      description:
        'Makes the request safe to retry: 1 to 255 visible ASCII characters, unique per operation (a UUID ' +
        'works). The same key with the same body within 24 hours replays the first response (with ' +
        '`Idempotent-Replayed: true`) without sending again; with another body: 422; while the first is ' +
        'still in flight: 409. Keys are scoped to the organization.',
    }),
  ),
});

/** Response header of a replayed response, for the route's OpenAPI entry. */
export const IDEMPOTENCY_RESPONSE_HEADERS: Record<string, TSchema> = {
  'Idempotent-Replayed': Type.String({
    enum: ['true'],
    description: '`true` when this is the stored response of an earlier request with the same Idempotency-Key.',
  }),
};
