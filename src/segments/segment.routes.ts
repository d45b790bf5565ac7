import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/index.js';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { AppError } from '../shared/errors.js';
import type { Segment } from './segment.model.js';
import {
  SegmentCreateBody,
  SegmentDeleted,
  SegmentList,
  SegmentListQuery,
  SegmentMembers,
  SegmentParams,
  SegmentSchema,
} from './segment.schemas.js';
import { createSegment, deleteSegment, getSegment, listSegmentMembers, listSegments } from './segment.service.js';

/**
 * /api/segments: saved filters of end users. Like the end-user routes: an organization key holding
 * End-users, the `{"error", "code"}` envelope and the codes of spec section 7.2.
 */

const TAGS = ['segments'];
const config = { family: 'coded' as const };
const BASE = '/api/segments';

function requireOrganizationKey(principal: Principal): void {
  if (principal.scope !== 'organization') {
    throw new AppError('FORBIDDEN', 'Segments need an organization-scoped key holding End-users.');
  }
}

const shown = ({ countedAt: _countedAt, ...segment }: Segment) => segment;

/** The methods each path answers; any other is 405 with Allow, from the method and path alone. */
const ALLOW = { collection: 'GET, HEAD, POST', byId: 'GET, HEAD, DELETE', members: 'GET, HEAD' } as const;
const OTHER_METHODS = ['PUT', 'PATCH', 'DELETE', 'POST', 'OPTIONS'] as const;

export const segmentRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const auth = requireKey(ctx, 'endusers', { after: requireOrganizationKey });
  const { db, clock } = ctx;

  app.post(
    BASE,
    {
      config,
      onRequest: auth,
      schema: {
        summary: 'Save a segment of end users',
        description: 'A saved filter; answered with the count of end users it matches now.',
        tags: TAGS,
        security: BEARER,
        body: SegmentCreateBody,
        response: { 201: SegmentSchema, ...errorResponses('coded', [400, 401, 403, 413]) },
      },
    },
    async (request, reply) => {
      const segment = await createSegment(db, clock, principalOf(request).orgId, request.body);
      return reply.code(201).send(shown(segment));
    },
  );

  app.get(
    BASE,
    {
      config,
      onRequest: auth,
      schema: {
        summary: 'List segments, newest first',
        description: 'Each `count` is the one taken when the segment was last read by ID (or created).',
        tags: TAGS,
        security: BEARER,
        querystring: SegmentListQuery,
        response: { 200: SegmentList, ...errorResponses('coded', [400, 401, 403]) },
      },
    },
    async (request) => {
      const page = await listSegments(db, principalOf(request).orgId, request.query);
      return { data: page.data.map(shown), nextCursor: page.nextCursor };
    },
  );

  app.get(
    `${BASE}/:segmentId`,
    {
      config,
      onRequest: auth,
      schema: {
        summary: 'A segment, with its members counted now',
        tags: TAGS,
        security: BEARER,
        params: SegmentParams,
        response: { 200: SegmentSchema, ...errorResponses('coded', [401, 403, 404]) },
      },
    },
    async (request) => shown(await getSegment(db, clock, principalOf(request).orgId, request.params.segmentId)),
  );

  app.get(
    `${BASE}/:segmentId/endusers`,
    {
      config,
      onRequest: auth,
      schema: {
        summary: "A segment's end users, newest first",
        description: 'Keyset pagination: pass `nextCursor` back as `cursor` until it is null.',
        tags: TAGS,
        security: BEARER,
        params: SegmentParams,
        querystring: SegmentListQuery,
        response: { 200: SegmentMembers, ...errorResponses('coded', [400, 401, 403, 404]) },
      },
    },
    async (request) => listSegmentMembers(db, principalOf(request).orgId, request.params.segmentId, request.query),
  );

  app.delete(
    `${BASE}/:segmentId`,
    {
      config,
      onRequest: auth,
      schema: {
        summary: 'Delete a segment',
        description: 'Its end users stay; a send scheduled to it and not yet run ends canceled when it comes due.',
        tags: TAGS,
        security: BEARER,
        params: SegmentParams,
        response: { 200: SegmentDeleted, ...errorResponses('coded', [401, 403, 404]) },
      },
    },
    async (request) => {
      const deleted = await deleteSegment(db, principalOf(request).orgId, request.params.segmentId);
      return { id: deleted.id, deleted: true as const };
    },
  );

  for (const [path, url] of [
    ['collection', BASE],
    ['byId', `${BASE}/:segmentId`],
    ['members', `${BASE}/:segmentId/endusers`],
  ] as const) {
    const allow = ALLOW[path];
    app.route({
      method: OTHER_METHODS.filter((m) => !allow.includes(m)),
      url,
      config,
      schema: { hide: true },
      onRequest: async (request: FastifyRequest) => {
        throw new AppError('METHOD_NOT_ALLOWED', `Method ${request.method} is not allowed here; use ${allow}.`, {
          headers: { allow },
        });
      },
      handler: async () => {
        throw new AppError('INTERNAL', 'unreachable: the onRequest hook answers');
      },
    });
  }
};
