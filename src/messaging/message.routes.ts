import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import { BEARER, keyEpochConfirmer, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { getMessage, MessageResponse } from './message.service.js';
import { markMessageRead } from './read-receipt.service.js';

const ReadBody = Type.Object(
  {
    typing: Type.Optional(
      Type.Boolean({ description: 'Also show the typing indicator (up to about 25 s, or until the next message).' }),
    ),
  },
  { title: 'ReadReceiptRequest', additionalProperties: false, examples: [{ typing: true }] },
);

const ReadResponse = Type.Object(
  {
    success: Type.Literal(true),
    messageId: Type.String({ description: 'The message marked read.' }),
    typing: Type.Boolean({ description: 'Whether the typing indicator was asked for.' }),
  },
  {
    title: 'ReadReceiptResponse',
    examples: [{ success: true, messageId: 'wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTdF', typing: true }],
  },
);

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

  app.post(
    '/api/messages/:messageId/read',
    {
      config: { family: 'channel' },
      onRequest: [requireKey(ctx, 'channels')],
      // No body at all: marked read, no typing indicator.
      preValidation: async (request) => {
        if (request.body === undefined || request.body === null) (request as { body: unknown }).body = {};
      },
      schema: {
        summary: 'Mark a received message read',
        description:
          'Marks an inbound message read at the provider (the user sees it read) and, with `typing: true`, shows ' +
          "the typing indicator. Agent keys reach only the messages of their own agent's conversations (another " +
          "agent's is 404, as if absent); a message the organization sent is 400. A provider refusal is 400, a " +
          'provider that cannot be reached 502.',
        tags: ['channels'],
        security: BEARER,
        params: Type.Object({
          messageId: Type.String({
            minLength: 1,
            maxLength: 512,
            description: "The provider's ID of the received message (`wamid.`...).",
          }),
        }),
        body: ReadBody,
        response: { 200: ReadResponse, ...errorResponses('channel', [400, 401, 403, 404, 502]) },
      },
    },
    async (request) =>
      markMessageRead(ctx, principalOf(request), request.params.messageId, request.body.typing === true),
  );
};
