import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { authenticate, type Principal } from '../auth/auth.js';
import type { AppContext } from '../context.js';
import type { Permission } from '../keys/permissions.js';
import { AppError } from '../shared/errors.js';
import type { Family } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** Which error envelope this route answers with. */
    family?: Family;
  }
}

/** The onRequest hook of a protected route: authenticates before the body is even read. */
export function requireKey(ctx: AppContext, permission: Permission): onRequestHookHandler {
  const deps = { db: ctx.db, region: ctx.region.region, clock: ctx.clock, lastUsed: ctx.lastUsed };
  return async function authHook(request: FastifyRequest, reply: FastifyReply) {
    reply.header('cache-control', 'no-store');
    request.principal = await authenticate(deps, request.headers.authorization, permission);
  };
}

/** The authenticated principal of a protected route's request. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('UNAUTHORIZED', 'Missing Authorization header.');
  return request.principal;
}

/** OpenAPI security requirement of protected routes. */
export const BEARER = [{ bearerAuth: [] }];
