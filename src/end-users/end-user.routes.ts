import { METHODS } from 'node:http';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Ajv from 'ajv';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../auth/index.js';
import type { AppContext } from '../context.js';
import { BEARER, keyEpochConfirmer, principalOf, requireKey } from '../http/auth.js';
import { installJsonParser } from '../http/json-body.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import {
  ALLOW,
  EndUserBatchBody,
  EndUserBatchEnvelope,
  EndUserBatchResult,
  EndUserCreateBody,
  EndUserDeleted,
  EndUserIdParams,
  EndUserList,
  EndUserListQuery,
  EndUserPatchBody,
  type EndUserPath,
  EndUserSchema,
  endUserErrors,
  MAX_BATCH,
} from './end-user.schemas.js';
import {
  createEndUser,
  createEndUsers,
  deleteEndUser,
  getEndUser,
  invalidOrigin,
  listEndUsers,
  READ_ONLY_FIELDS,
  updateEndUser,
} from './end-user.service.js';

const TAGS = ['end users'];
const config = { family: 'coded' as const };
const BASE = '/api/endusers';

/** End users belong to the whole organization: agent and campaign keys never reach them. */
function requireOrganizationKey(principal: Principal): void {
  if (principal.scope !== 'organization') {
    throw new AppError('FORBIDDEN', 'End users need an organization-scoped key holding End-users.');
  }
}

const pathOf = (request: FastifyRequest) => request.url.split('?')[0] ?? request.url;

function invalidUrl(request: FastifyRequest): AppError {
  return new AppError(
    'INVALID_URL',
    `The path ${clip(pathOf(request), 200)} does not match /api/endusers/<endUserId>.`,
  );
}

function methodNotAllowed(request: FastifyRequest, path: EndUserPath): AppError {
  const allow = ALLOW[path];
  return new AppError('METHOD_NOT_ALLOWED', `Method ${request.method} is not allowed here; use ${allow}.`, {
    headers: { allow },
  });
}

/** `/api/endusers/` (an empty ID) is a malformed by-ID path, like `/api/endusers/a/b`. */
function requireIdInPath(request: FastifyRequest): void {
  const { endUserId } = request.params as { endUserId?: string };
  if (!endUserId) throw invalidUrl(request);
}

/** onRequest of the routes that only answer 405: from the method and path alone, before the key. */
const rejectMethod = (path: EndUserPath) => async (request: FastifyRequest) => {
  if (path === 'byId') requireIdInPath(request);
  throw methodNotAllowed(request, path);
};

/**
 * Every method Node's HTTP parser lets through (all but CONNECT, which never reaches a route), so
 * that OPTIONS, TRACE or PROPFIND on an end-user path is a 405 and not a 404. Fastify routes nine
 * methods unless told about the others; only the 405 and INVALID_URL routes below use them.
 */
function everyMethod(app: FastifyInstance): string[] {
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method);
  }
  return METHODS.filter((m) => m !== 'CONNECT');
}

const unreachable = async (): Promise<never> => {
  throw new AppError('INTERNAL', 'unreachable: the onRequest hook answers');
};

const DECIMAL = /^[0-9]+$/;

/**
 * Query checks that must see the text as sent, before the schema coerces it: integers only in
 * decimal digits (`1e1`, `0x10`, ` 10` would otherwise pass as numbers), and a repeated `origin` is
 * an origin that is not one of the three (INVALID_ORIGIN), not a malformed query.
 */
async function checkListQuery(request: FastifyRequest): Promise<void> {
  const query = request.query as Record<string, unknown>;
  if (Array.isArray(query.origin)) throw invalidOrigin();
  for (const field of ['limit', 'updatedSince']) {
    const value = query[field];
    if (typeof value === 'string' && !DECIMAL.test(value)) {
      throw new AppError('INVALID_BODY', `Invalid query parameter: '${field}' must be written in decimal digits.`, {
        details: { field },
      });
    }
  }
}

// Batch items are checked one by one in the service (one bad item fails alone), so the route only
// checks the envelope; its OpenAPI entry still shows the full item schema.
const envelopeAjv = new Ajv.default({ allErrors: false, coerceTypes: false, removeAdditional: false, strict: false });
const checkBatchEnvelope = envelopeAjv.compile(EndUserBatchEnvelope);

export const endUserRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  // One onRequest hook per route: the path check (by-ID routes), the key, then the key's scope.
  const auth = requireKey(ctx, 'endusers', { after: requireOrganizationKey });
  const byIdAuth = requireKey(ctx, 'endusers', { before: requireIdInPath, after: requireOrganizationKey });
  // GET reads the key epoch in its own query (a cached key then costs no statement of its own).
  const getByIdAuth = requireKey(ctx, 'endusers', {
    before: requireIdInPath,
    after: requireOrganizationKey,
    epochInQuery: true,
  });
  const { db, clock } = ctx;
  const { bodyLimit } = ctx.config;

  app.get(
    BASE,
    {
      config,
      onRequest: auth,
      preValidation: checkListQuery,
      schema: {
        summary: 'List end users, newest first',
        description:
          'Keyset pagination: pass `nextCursor` back as `cursor` until it is null. Filters combine with AND. ' +
          'Records of one batch share a createdAt and are listed later items first.',
        tags: TAGS,
        security: BEARER,
        querystring: EndUserListQuery,
        response: { 200: EndUserList, ...endUserErrors('list', bodyLimit) },
      },
    },
    async (request) => listEndUsers(db, principalOf(request).orgId, request.query),
  );

  app.post(
    BASE,
    {
      config,
      onRequest: auth,
      schema: {
        summary: 'Create an end user',
        tags: TAGS,
        security: BEARER,
        body: EndUserCreateBody,
        response: { 201: EndUserSchema, ...endUserErrors('create', bodyLimit) },
      },
    },
    async (request, reply) => {
      const created = await createEndUser(db, clock, principalOf(request).orgId, request.body);
      return reply.code(201).send(created);
    },
  );

  app.post(
    `${BASE}/batch`,
    {
      config,
      onRequest: auth,
      validatorCompiler: () => (data: unknown) =>
        checkBatchEnvelope(data)
          ? { value: data }
          : {
              error: Object.assign(new Error('invalid'), {
                validation: checkBatchEnvelope.errors ?? [],
                validationContext: 'body',
              }),
            },
      schema: {
        summary: `Create up to ${MAX_BATCH.toLocaleString('en-US')} end users`,
        description:
          'Partial success: 200 with one result per item, in input order. Each item is created whole or not at ' +
          'all; the first item to be created with an email or phone wins it (`duplicateOf` on later ones). ' +
          `The whole request must fit in this server's body limit of ${bodyLimit} bytes, whatever the per-item ` +
          'limits allow: 1,000 items with long names and many tags exceed it and get 413 PAYLOAD_TOO_LARGE with ' +
          'nothing created; send them in smaller batches. Records of one batch share a createdAt; their `_id`s ' +
          'increase with their position, so lists show later items first.',
        tags: TAGS,
        security: BEARER,
        body: EndUserBatchBody,
        response: { 200: EndUserBatchResult, ...endUserErrors('batch', bodyLimit) },
      },
    },
    async (request) => createEndUsers(db, clock, principalOf(request).orgId, request.body),
  );

  app.get(
    `${BASE}/:endUserId`,
    {
      config,
      onRequest: getByIdAuth,
      schema: {
        summary: 'Get an end user',
        tags: TAGS,
        security: BEARER,
        params: EndUserIdParams,
        response: { 200: EndUserSchema, ...endUserErrors('get', bodyLimit) },
      },
    },
    async (request) =>
      getEndUser(db, principalOf(request).orgId, request.params.endUserId, keyEpochConfirmer(ctx, request)),
  );

  // In its own scope, so that application/merge-patch+json (the media type of a JSON merge patch,
  // RFC 7396) is read as JSON here and nowhere else.
  await app.register(async (scope) => {
    const patchScope = scope.withTypeProvider<TypeBoxTypeProvider>();
    installJsonParser(patchScope, 'application/merge-patch+json');
    patchScope.patch(
      `${BASE}/:endUserId`,
      {
        config,
        onRequest: byIdAuth,
        // Read-only fields get their own message, before the schema calls them unknown.
        preValidation: async (request) => {
          const body = request.body;
          if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
          for (const field of READ_ONLY_FIELDS) {
            if (Object.hasOwn(body, field)) {
              throw new AppError('INVALID_BODY', `Invalid body: '${field}' is read-only.`, { details: { field } });
            }
          }
        },
        schema: {
          summary: 'Update an end user (JSON merge patch)',
          description:
            'Send `Content-Type: application/json` or `application/merge-patch+json`. A duplicate email or phone ' +
            'answers 400 UPDATE_FAILED.',
          tags: TAGS,
          security: BEARER,
          params: EndUserIdParams,
          body: EndUserPatchBody,
          response: { 200: EndUserSchema, ...endUserErrors('update', bodyLimit) },
        },
      },
      async (request) => updateEndUser(db, clock, principalOf(request).orgId, request.params.endUserId, request.body),
    );
  });

  app.delete(
    `${BASE}/:endUserId`,
    {
      config,
      onRequest: byIdAuth,
      schema: {
        summary: 'Delete an end user for good',
        tags: TAGS,
        security: BEARER,
        params: EndUserIdParams,
        response: { 200: EndUserDeleted, ...endUserErrors('delete', bodyLimit) },
      },
    },
    async (request) => {
      const deleted = await deleteEndUser(db, principalOf(request).orgId, request.params.endUserId);
      return { _id: deleted._id, deleted: true as const };
    },
  );

  // Every other method on the three paths is a 405 (GET /api/endusers/batch would otherwise reach
  // the by-ID route with the ID "batch"), and any path below /api/endusers/<id> is INVALID_URL, for
  // every method: real routes, undocumented, whose onRequest answers before the key is checked or
  // the body read. (Their 405 is documented on the operations of the same path.)
  const methods = everyMethod(app);
  const supported: Record<EndUserPath, readonly string[]> = {
    collection: ['GET', 'HEAD', 'POST'],
    batch: ['POST'],
    byId: ['GET', 'HEAD', 'PATCH', 'DELETE'],
  };
  for (const [path, url] of [
    ['collection', BASE],
    ['batch', `${BASE}/batch`],
    ['byId', `${BASE}/:endUserId`],
  ] as const) {
    app.route({
      method: methods.filter((m) => !supported[path].includes(m)),
      url,
      config,
      schema: { hide: true },
      onRequest: rejectMethod(path),
      handler: unreachable,
    });
  }
  app.route({
    method: methods,
    url: `${BASE}/:endUserId/*`,
    config,
    schema: { hide: true },
    onRequest: async (request) => {
      throw invalidUrl(request);
    },
    handler: unreachable,
  });
};
