import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Ajv from 'ajv';
import type { FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { AppError } from '../shared/errors.js';
import {
  EndUserBatchBody,
  EndUserBatchEnvelope,
  EndUserBatchResult,
  EndUserCreateBody,
  EndUserDeleted,
  EndUserIdParams,
  EndUserList,
  EndUserListQuery,
  EndUserPatchBody,
  EndUserSchema,
} from './end-user.schemas.js';
import {
  createEndUser,
  createEndUsers,
  deleteEndUser,
  getEndUser,
  listEndUsers,
  READ_ONLY_FIELDS,
  updateEndUser,
} from './end-user.service.js';

const TAGS = ['end users'];
const config = { family: 'coded' as const };

/** End users belong to the whole organization: agent and campaign keys never reach them. */
async function requireOrganizationKey(request: FastifyRequest): Promise<void> {
  if (principalOf(request).scope !== 'organization') {
    throw new AppError('FORBIDDEN', 'End users need an organization-scoped key holding End-users.');
  }
}

/** `/api/endusers/` (an empty ID) is a malformed by-ID path, like `/api/endusers/a/b`. */
async function requireIdInPath(request: FastifyRequest): Promise<void> {
  const { endUserId } = request.params as { endUserId?: string };
  if (!endUserId) throw invalidUrl(request);
}

function invalidUrl(request: FastifyRequest): AppError {
  const path = request.url.split('?')[0] ?? request.url;
  return new AppError('INVALID_URL', `The path ${path} does not match /api/endusers/<endUserId>.`);
}

/** Answers 405 with the methods the route does support; no key needed to learn that. */
function methodNotAllowed(allow: string) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<never> => {
    if ((request.params as { endUserId?: string }).endUserId === '') throw invalidUrl(request);
    throw new AppError('METHOD_NOT_ALLOWED', `Method ${request.method} is not allowed here; use ${allow}.`, {
      headers: { allow },
    });
  };
}

// Batch items are checked one by one in the service (one bad item fails alone), so the route only
// checks the envelope; its OpenAPI entry still shows the full item schema.
const envelopeAjv = new Ajv.default({ allErrors: false, coerceTypes: false, removeAdditional: false, strict: false });
const checkBatchEnvelope = envelopeAjv.compile(EndUserBatchEnvelope);

export const endUserRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const auth = [requireKey(ctx, 'endusers'), requireOrganizationKey];
  const byIdAuth = [requireIdInPath, ...auth];
  const { db, clock } = ctx;

  app.get(
    '/api/endusers',
    {
      config,
      onRequest: auth,
      schema: {
        summary: 'List end users, newest first',
        description:
          'Keyset pagination: pass `nextCursor` back as `cursor` until it is null. Filters combine with AND.',
        tags: TAGS,
        security: BEARER,
        querystring: EndUserListQuery,
        response: { 200: EndUserList, ...errorResponses('coded', [400, 401, 403]) },
      },
    },
    async (request) => listEndUsers(db, principalOf(request).orgId, request.query),
  );

  app.post(
    '/api/endusers',
    {
      config,
      onRequest: auth,
      schema: {
        summary: 'Create an end user',
        tags: TAGS,
        security: BEARER,
        body: EndUserCreateBody,
        response: { 201: EndUserSchema, ...errorResponses('coded', [400, 401, 403, 409, 413]) },
      },
    },
    async (request, reply) => {
      const created = await createEndUser(db, clock, principalOf(request).orgId, request.body);
      return reply.code(201).send(created);
    },
  );

  app.post(
    '/api/endusers/batch',
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
        summary: 'Create up to 1,000 end users',
        description:
          'Partial success: 200 with one result per item, in input order. Each item is created whole or not at all.',
        tags: TAGS,
        security: BEARER,
        body: EndUserBatchBody,
        response: { 200: EndUserBatchResult, ...errorResponses('coded', [400, 401, 403, 413]) },
      },
    },
    async (request) => createEndUsers(db, clock, principalOf(request).orgId, request.body),
  );

  app.get(
    '/api/endusers/:endUserId',
    {
      config,
      onRequest: byIdAuth,
      schema: {
        summary: 'Get an end user',
        tags: TAGS,
        security: BEARER,
        params: EndUserIdParams,
        response: { 200: EndUserSchema, ...errorResponses('coded', [400, 401, 403, 404]) },
      },
    },
    async (request) => getEndUser(db, principalOf(request).orgId, request.params.endUserId),
  );

  app.patch(
    '/api/endusers/:endUserId',
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
        description: 'A duplicate email or phone answers 400 UPDATE_FAILED.',
        tags: TAGS,
        security: BEARER,
        params: EndUserIdParams,
        body: EndUserPatchBody,
        response: { 200: EndUserSchema, ...errorResponses('coded', [400, 401, 403, 404, 413]) },
      },
    },
    async (request) => updateEndUser(db, clock, principalOf(request).orgId, request.params.endUserId, request.body),
  );

  app.delete(
    '/api/endusers/:endUserId',
    {
      config,
      onRequest: byIdAuth,
      schema: {
        summary: 'Delete an end user for good',
        tags: TAGS,
        security: BEARER,
        params: EndUserIdParams,
        response: { 200: EndUserDeleted, ...errorResponses('coded', [400, 401, 403, 404]) },
      },
    },
    async (request) => {
      const deleted = await deleteEndUser(db, principalOf(request).orgId, request.params.endUserId);
      return { _id: deleted._id, deleted: true as const };
    },
  );

  const unsupported: [string, HTTPMethods[], string][] = [
    ['/api/endusers', ['PUT', 'PATCH', 'DELETE'], 'GET, POST'],
    ['/api/endusers/batch', ['GET', 'PUT', 'PATCH', 'DELETE'], 'POST'],
    ['/api/endusers/:endUserId', ['POST', 'PUT'], 'GET, PATCH, DELETE'],
  ];
  for (const [url, methods, allow] of unsupported) {
    app.route({ method: methods, url, config, schema: { hide: true }, handler: methodNotAllowed(allow) });
  }

  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/api/endusers/:endUserId/*',
    config,
    schema: { hide: true },
    handler: async (request) => {
      throw invalidUrl(request);
    },
  });
};
