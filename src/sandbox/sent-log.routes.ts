import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { SENT_LOG_BOUND } from './sandbox-sent-log.js';
import { SandboxSentList, SandboxSentQuery } from './sent-log.schemas.js';
import { listSandboxSent } from './sent-log.service.js';

/** GET /api/sandbox/messages, only in sandbox mode: what the sandbox was sent. */
export const sentLogRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sandbox = ctx.messaging.sandbox;
  if (!sandbox) return;
  app.get(
    '/api/sandbox/messages',
    {
      config: { family: 'channel' },
      onRequest: [requireKey(ctx, 'channels')],
      schema: {
        summary: 'Sandbox only: what the sandbox was sent',
        description:
          "Every request Parley made on the organization's numbers' messages endpoint of the built-in sandbox " +
          '(sends and read receipts, accepted or refused), newest first, each with the exact Cloud API body the ' +
          `sandbox received. The sandbox keeps the last ${SENT_LOG_BOUND.toLocaleString('en')} requests of each ` +
          "number. An agent key sees only its own agent's number; naming another agent is 403, an unknown one 404. " +
          'Absent when a real provider is configured.',
        tags: ['sandbox'],
        security: BEARER,
        querystring: SandboxSentQuery,
        response: { 200: SandboxSentList, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    async (request) => listSandboxSent(ctx.db, (query) => sandbox.sent(query), principalOf(request), request.query),
  );
};
