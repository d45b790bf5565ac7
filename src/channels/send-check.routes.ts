import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { ChannelSendBody, SendCheckResponse } from './channel.schemas.js';
import { checkChannelSend } from './send-check.service.js';

/** POST /api/channels/send/check: a send judged, never made. */
export const sendCheckRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.post(
    '/api/channels/send/check',
    {
      config: { family: 'channel' },
      // No rate limit hook: a check counts nothing (the rate_limit rule peeks at the counters).
      onRequest: requireKey(ctx, 'channels'),
      schema: {
        summary: 'Check a send without sending it',
        description:
          'Takes the body of POST /api/channels/send with the same key, permission and body validation (401, 403, 400 ' +
          'as a send) and answers, sending nothing and consuming no rate limit, whether the send would go and why ' +
          'not: each of the rules agent, number, window, template, parameters, consent and rate_limit in that order, ' +
          'ok or with the sentence the send would have answered.',
        tags: ['channels'],
        security: BEARER,
        body: ChannelSendBody,
        response: { 200: SendCheckResponse, ...errorResponses('channel', [400, 401, 403, 413]) },
      },
    },
    async (request) => checkChannelSend(ctx, principalOf(request), request.body),
  );
};
