import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import { errorResponses } from './errors.js';

const Health = Type.Object(
  {
    status: Type.Literal('ok'),
    timestamp: Type.String({ format: 'date-time', description: 'Server time, ISO 8601.' }),
    region: Type.String({ description: 'Region code: us, eu, in or qa.' }),
  },
  { title: 'Health' },
);

export const publicRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get(
    '/api/health',
    {
      schema: {
        summary: 'Reachability check',
        tags: ['public'],
        security: [],
        response: { 200: Health, ...errorResponses('coded', [400]) },
      },
    },
    async () => ({
      status: 'ok' as const,
      timestamp: new Date(ctx.clock.now()).toISOString(),
      region: ctx.region.region,
    }),
  );

  let document: unknown;
  app.get(
    '/api/openapi.json',
    {
      schema: {
        summary: "This region's OpenAPI description",
        tags: ['public'],
        security: [],
        response: {
          200: Type.Object(
            {},
            { title: 'OpenApiDocument', additionalProperties: true, description: 'An OpenAPI 3.0 document.' },
          ),
          ...errorResponses('coded', [400]),
        },
      },
    },
    async () => {
      document ??= app.swagger();
      return document;
    },
  );
};
