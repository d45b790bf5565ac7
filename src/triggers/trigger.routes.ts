import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { findAgent } from '../agents/agent.service.js';
import { assertAgentAllowed } from '../auth/index.js';
import { SendOutcomeUnknown, sendClaimExpiryMs } from '../channels/index.js';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { IDEMPOTENCY_RESPONSE_HEADERS, IdempotencyHeaders, idempotency } from '../idempotency/index.js';
import { RATE_LIMIT_HEADERS, rateLimit, rateLimitedResponse, withHeaders } from '../rate-limit/index.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { startTrigger } from './start-trigger.js';
import { TriggerParams, TriggerStartBody, TriggerStartResponse } from './trigger.schemas.js';

/** POST /api/triggers/<agentId>/<triggerId>: start a conversation at an agent's entry point. */
export const triggerRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const idem = idempotency(ctx, 'POST /api/triggers', {
    inFlightExpiryMs: sendClaimExpiryMs(ctx.config.messaging.providerTimeoutMs),
  });
  /**
   * The agent of the path, before the body is read and before the limit counts the request: an
   * agent key aimed at another agent is 403, an agent not in the organization 404.
   */
  const agentOfPath = async (request: FastifyRequest, _reply: FastifyReply) => {
    const { agentId } = request.params as { agentId: string };
    const principal = principalOf(request);
    assertAgentAllowed(principal, agentId);
    if (!(await findAgent(ctx.db, principal.orgId, agentId))) {
      throw new AppError('NOT_FOUND', `No agent with ID '${clip(agentId, 64)}' in this organization.`);
    }
  };
  app.post(
    '/api/triggers/:agentId/:triggerId',
    {
      config: { family: 'channel' },
      onRequest: [requireKey(ctx, 'triggers'), agentOfPath, rateLimit(ctx)],
      preHandler: idem.preHandler,
      onSend: idem.onSend,
      schema: {
        summary: "Start a conversation at an agent's trigger",
        description:
          'Finds or makes the end user by phone (a new one gets origin `manual`, filled from `endUser`), finds the ' +
          'open conversation of the agent with them or opens one (keeping `context`), and sends the trigger’s ' +
          'opening template from the agent’s number. The agent’s hook receives `conversation.started`. Counts ' +
          'against the same per-key and per-organization limits as POST /api/channels/send.',
        tags: ['triggers'],
        security: BEARER,
        headers: IdempotencyHeaders,
        params: TriggerParams,
        body: TriggerStartBody,
        response: {
          200: withHeaders(TriggerStartResponse, { ...RATE_LIMIT_HEADERS, ...IDEMPOTENCY_RESPONSE_HEADERS }),
          ...errorResponses('channel', [400, 401, 403, 404, 409, 413, 422, 502]),
          ...rateLimitedResponse('channel'),
        },
      },
    },
    async (request) => {
      try {
        return await startTrigger(
          ctx,
          principalOf(request),
          request.params.agentId,
          request.params.triggerId,
          request.body,
        );
      } catch (err) {
        if (err instanceof SendOutcomeUnknown) idem.keepFailure(request);
        throw err;
      }
    },
  );
};
