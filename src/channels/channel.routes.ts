import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { BEARER, keyEpochConfirmer, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { IDEMPOTENCY_RESPONSE_HEADERS, IdempotencyHeaders, idempotency } from '../idempotency/index.js';
import { RATE_LIMIT_HEADERS, rateLimit, rateLimitedResponse, withHeaders } from '../rate-limit/index.js';
import { ChannelSendBody, ChannelSendResponse } from './channel.schemas.js';
import { SendOutcomeUnknown, sendChannelMessage } from './channel.service.js';
import { sendClaimExpiryMs } from './send-outcome.js';

export { sendClaimExpiryMs } from './send-outcome.js';

/** POST /api/channels/send: authenticate, validate, call the verb, answer with what it returns. */
export const channelRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const idem = idempotency(ctx, 'POST /api/channels/send', {
    inFlightExpiryMs: sendClaimExpiryMs(ctx.config.messaging.providerTimeoutMs),
  });
  app.post(
    '/api/channels/send',
    {
      config: { family: 'channel' },
      // The key, when cached, is confirmed by the epoch the send's first read sees (before any write).
      onRequest: [requireKey(ctx, 'channels', { epochInQuery: true }), rateLimit(ctx)],
      preHandler: idem.preHandler,
      onSend: idem.onSend,
      schema: {
        summary: 'Send a message on a channel',
        description:
          "Sends a template (any time) or free text (only within 24 hours of the recipient's last message to the " +
          "agent's number) from the messaging number assigned to the agent. A provider rejection is 400 with the " +
          'reason; a provider that cannot be reached or fails is 502, and the send is not retried. A 502 whose ' +
          'sentence says the outcome is unknown (no answer in time) may have been accepted: its Idempotency-Key ' +
          'keeps that answer, and GET /api/messages/{id} shows what the provider later reports.',
        tags: ['channels'],
        security: BEARER,
        headers: IdempotencyHeaders,
        body: ChannelSendBody,
        response: {
          200: withHeaders(ChannelSendResponse, { ...RATE_LIMIT_HEADERS, ...IDEMPOTENCY_RESPONSE_HEADERS }),
          ...errorResponses('channel', [400, 401, 403, 404, 409, 413, 422, 502]),
          ...rateLimitedResponse('channel'),
        },
      },
    },
    async (request, reply) => {
      try {
        const result = await sendChannelMessage(
          ctx,
          principalOf(request),
          request.body,
          keyEpochConfirmer(ctx, request),
        );
        // The verb decides the status (always 200 today; errors are thrown as AppError).
        return reply.code(result.status as 200).send(result.body);
      } catch (err) {
        if (err instanceof SendOutcomeUnknown) idem.keepFailure(request);
        throw err;
      }
    },
  );
};
