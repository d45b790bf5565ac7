import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { TemplateList, TemplateListQuery } from './template.schemas.js';
import { listAgentTemplates } from './template-list.service.js';

/** GET /api/templates: an agent's number's template catalogue. */
export const templateRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get(
    '/api/templates',
    {
      config: { family: 'channel' },
      onRequest: requireKey(ctx, ['channels', 'triggers']),
      schema: {
        summary: "List the templates of an agent's number",
        description:
          "The templates of the agent's messaging number as the provider has them (synced when the number is added, " +
          "every PARLEY_TEMPLATE_SYNC_MS, on `parley template sync`, and at once on the provider's status webhook). " +
          "Permission Channels or Triggers. An agent key sees its own agent's number only (another agent: 403); an " +
          'organization key must name the agent (400 otherwise).',
        tags: ['templates'],
        security: BEARER,
        querystring: TemplateListQuery,
        response: { 200: TemplateList, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    async (request) => listAgentTemplates(ctx.db, principalOf(request), request.query.agent),
  );
};
