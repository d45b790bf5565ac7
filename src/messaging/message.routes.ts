import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import { BEARER, keyEpochConfirmer, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { getMessage, MessageResponse } from './message.service.js';

export const messageRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get(
    '/api/messages/:messageId',
    {
      config: { family: 'channel' },
      onRequest: [requireKey(ctx, 'channels', { epochInQuery: true })],
      schema: {
        summary: 'A sent message and its delivery status history',
        description:
          "By the `messageId` a send returned (the provider message ID). Agent keys see only their own agent's messages.",
        tags: ['channels'],
        security: BEARER,
        params: Type.Object({ messageId: Type.String({ minLength: 1, maxLength: 512 }) }),
        response: { 200: MessageResponse, ...errorResponses('channel', [400, 401, 403, 404]) },
      },
    },
    async (request) =>
      getMessage(ctx, () => principalOf(request), request.params.messageId, keyEpochConfirmer(ctx, request)),
  );
};
