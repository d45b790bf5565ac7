import type {
  FastifyError,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onRequestHookHandler,
} from 'fastify';
import { admit, authenticate, type KeyRecord, keyHashOf, type Principal } from '../auth/auth.js';
import { keyCacheOf } from '../auth/key-cache.js';
import {
  keyEpochConfirmer as confirmerOf,
  confirmKeyEpoch as confirmPendingKey,
  type KeyEpochConfirmer,
  type PendingKey,
  settleKeyEpoch as settlePendingKey,
  unconfirmedKeyError,
} from '../auth/key-epoch.js';
import type { AppContext } from '../context.js';
import type { Permission } from '../keys/permissions.js';
import { AppError } from '../shared/errors.js';
import type { Family } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    /** Set by `requireKey` with `epochInQuery` (only on those routes); cleared by `confirmKeyEpoch`. */
    keyCheck?: PendingKey<Principal> | undefined;
  }
  interface FastifyContextConfig {
    /** Which error envelope this route answers with. */
    family?: Family;
  }
}

export interface RequireKeyOptions {
  /** Checks of the request alone that come before the key (a malformed path, say). */
  readonly before?: (request: FastifyRequest) => void;
  /** Checks of the authenticated principal that come after the permission (a scope, say). */
  readonly after?: (principal: Principal) => void;
  /**
   * The route reads the key epoch in its own query and calls `confirmKeyEpoch` with it before it
   * answers (a cached key then costs no statement or round trip of its own): a read, or a route
   * whose first statement is a read, confirmed before anything is written. Any error answered
   * while the key awaits confirmation confirms it first (the error handler), so a key revoked
   * meanwhile gets its 401, not the error its request would have had. A route that answers without
   * confirming it fails closed: the 401 of a revoked key (src/auth/key-epoch.ts).
   */
  readonly epochInQuery?: boolean;
}

/**
 * The onRequest hook of a protected route: authenticates before the body is even read. Checks a
 * route makes before or after the key run in the same hook (one hook per request, not three).
 */
export function requireKey(
  ctx: AppContext,
  permission: Permission | readonly Permission[],
  options: RequireKeyOptions = {},
): onRequestHookHandler {
  const deps = {
    db: ctx.db,
    region: ctx.region.region,
    clock: ctx.clock,
    lastUsed: ctx.lastUsed,
    keys: keyCacheOf<KeyRecord>(ctx.database),
  };
  const { before, after, epochInQuery } = options;
  const again = async (authorization: string | undefined) => {
    const principal = await authenticate(deps, authorization, permission);
    after?.(principal);
    return principal;
  };
  // A callback hook, not an async one: a key the cache admits lets the request go on in the same
  // turn (no promise, no microtask before the route runs); only a database read waits.
  return function authHook(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    const { authorization } = request.headers;
    let admitted: boolean;
    try {
      before?.(request);
      reply.header('cache-control', 'no-store');
      admitted = epochInQuery === true && admitFromCache(request, authorization);
    } catch (err) {
      done(err as FastifyError);
      return;
    }
    // Called outside the try: what runs after the hook must not have its errors reported twice.
    if (admitted) {
      done();
      return;
    }
    again(authorization).then(
      (principal) => {
        request.principal = principal;
        done();
      },
      (err: FastifyError) => done(err),
    );
  };

  /** Admits the request's key from the cache, pending the epoch its route's query reads. */
  function admitFromCache(request: FastifyRequest, authorization: string | undefined): boolean {
    const hit = deps.keys.peek(keyHashOf(deps.region, authorization));
    // Only a key the cache admits outright; any refusal is decided from the database.
    if (!hit || !isAdmitted(hit.value, permission, after)) return false;
    const { principal, lastUsedAt } = hit.value;
    request.principal = principal;
    request.keyCheck = {
      epoch: hit.epoch,
      touch: () => deps.lastUsed.touch(principal.keyId, lastUsedAt, deps.clock.now()),
      again: () => again(authorization),
    };
    return true;
  }
}

function isAdmitted(
  record: KeyRecord,
  permission: Permission | readonly Permission[],
  after: ((principal: Principal) => void) | undefined,
): boolean {
  try {
    // Not `after?.(admit(...))`: with no `after`, that would skip admit() altogether.
    const principal = admit(record, permission);
    after?.(principal);
    return true;
  } catch {
    return false;
  }
}

/**
 * For routes with `epochInQuery`: the key epoch their query read (undefined: none, so it is read
 * now). See src/auth/key-epoch.ts: a key revoked (or a plan changed) meanwhile is refused here,
 * before the route answers.
 */
export function confirmKeyEpoch(
  ctx: Pick<AppContext, 'database'>,
  request: FastifyRequest,
  seen: number | undefined,
): Promise<void> | undefined {
  return confirmPendingKey(keyCacheOf(ctx.database), request, seen);
}

/**
 * Confirms the request's cached key now, if it still awaits it (before a write, or an error
 * answer); undefined when there is nothing to wait for.
 */
export function settleKeyEpoch(ctx: Pick<AppContext, 'database'>, request: FastifyRequest): Promise<void> | undefined {
  return request.keyCheck ? settlePendingKey(keyCacheOf(ctx.database), request) : undefined;
}

/** What a route with `epochInQuery` hands its read (src/auth/key-epoch.ts), if the key awaits confirmation. */
export function keyEpochConfirmer(
  ctx: Pick<AppContext, 'database'>,
  request: FastifyRequest,
): KeyEpochConfirmer | undefined {
  return request.keyCheck ? confirmerOf(keyCacheOf(ctx.database), request) : undefined;
}

/** Fail closed, as the answer goes out: the 401 of a request whose cached key was never confirmed. */
export function unconfirmedKey(request: FastifyRequest): Error | undefined {
  return request.keyCheck ? unconfirmedKeyError(request) : undefined;
}

/** The authenticated principal of a protected route's request. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('UNAUTHORIZED', 'Missing Authorization header.');
  return request.principal;
}

/** OpenAPI security requirement of protected routes. */
export const BEARER = [{ bearerAuth: [] }];
