import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { AppContext } from '../context.js';
import { principalOf } from '../http/auth.js';
import { errorResponses, type Family } from '../http/errors.js';
import { AppError } from '../shared/errors.js';

/**
 * The hook of a rate-limited route (channel send, triggers). Runs after `requireKey` in the
 * route's `onRequest` list, so it knows the key and organization and refuses before the body is
 * read:
 *
 *   onRequest: [requireKey(ctx, 'channels'), rateLimit(ctx)]
 *
 * Every response of the route then carries `RateLimit-Policy` and `RateLimit`
 * (draft-ietf-httpapi-ratelimit-headers); a refused request is 429 with `Retry-After: 60` in the
 * route's envelope.
 */
export function rateLimit(ctx: Pick<AppContext, 'sendRateLimiter'>): onRequestHookHandler {
  const limiter = ctx.sendRateLimiter;
  return async function rateLimitHook(request: FastifyRequest, reply: FastifyReply) {
    const principal = principalOf(request);
    const decision = await limiter.consume({ keyId: principal.keyId, orgId: principal.orgId });
    const headers = { 'ratelimit-policy': decision.policyHeader, ratelimit: decision.rateLimitHeader };
    if (!decision.allowed) {
      const whose = decision.binding.name === 'key' ? 'this API key' : 'this organization';
      throw new AppError(
        'RATE_LIMITED',
        `Rate limit exceeded: ${whose} may make ${decision.binding.quota} requests per ${limiter.windowSeconds} seconds; retry after ${decision.retryAfterSeconds} seconds.`,
        { headers: { 'retry-after': String(decision.retryAfterSeconds), ...headers } },
      );
    }
    reply.headers(headers);
  };
}

/**
 * Response headers of a rate-limited route, for its OpenAPI entry: each a schema whose
 * description @fastify/swagger moves to the header object.
 */
export const RATE_LIMIT_HEADERS: Record<string, TSchema> = {
  'RateLimit-Policy': Type.String({
    description:
      'The quota policies of this route (draft-ietf-httpapi-ratelimit-headers): per API key and per organization, ' +
      'requests (q) per window of seconds (w), e.g. `"key";q=600;w=60, "org";q=3000;w=60`.',
  }),
  RateLimit: Type.String({
    description:
      'The most constraining policy right now, or the one that refused: its name, remaining requests (r) and ' +
      'seconds until its window restarts (t), e.g. `"key";r=12;t=37`.',
  }),
};

/** Response headers of a 429, for its OpenAPI entry. */
export const RATE_LIMITED_HEADERS: Record<string, TSchema> = {
  'Retry-After': Type.Integer({ description: 'Seconds to wait before retrying: always 60.' }),
  ...RATE_LIMIT_HEADERS,
};

/** A response schema that also documents response headers (read by @fastify/swagger, ignored by the serializer). */
export function withHeaders<T extends TSchema>(schema: T, headers: Record<string, TSchema>): T {
  return { ...schema, headers };
}

/** The 429 entry of a rate-limited route's `response` schema, with its headers. */
export function rateLimitedResponse(family: Family): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const [status, schema] of Object.entries(errorResponses(family, [429]))) {
    out[Number(status)] = withHeaders(schema, RATE_LIMITED_HEADERS);
  }
  return out;
}
