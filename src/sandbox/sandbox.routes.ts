import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { simulateInbound } from './sandbox.service.js';
import { SANDBOX_INBOUND_BODY_LIMIT, SandboxInboundBody } from './sandbox-inbound.schemas.js';

const SandboxInboundResponse = Type.Object(
  {
    success: Type.Literal(true),
    messageId: Type.String({ description: "The inbound message's provider ID." }),
  },
  { title: 'SandboxInboundResponse' },
);

/** Test helper, only in sandbox mode: the sandbox delivers a signed inbound webhook to this server. */
export const sandboxRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sandbox = ctx.messaging.sandbox;
  if (!sandbox) return;
  app.post(
    '/api/sandbox/inbound',
    {
      config: { family: 'channel' },
      bodyLimit: Math.max(ctx.config.bodyLimit, SANDBOX_INBOUND_BODY_LIMIT),
      onRequest: [requireKey(ctx, 'channels')],
      schema: {
        summary: "Sandbox only: simulate a user writing to an agent's number",
        description:
          "The built-in sandbox delivers a signed inbound message webhook from `from` to the agent's number, which " +
          'opens the 24-hour window and records the end user. Answers once Parley has applied that webhook (502 if ' +
          'it could not, or not within 10 seconds). Same agent rules as a send. Absent when a real provider is configured.\n\n' +
          'One kind of message: `text`, or one of `image`, `video`, `audio`, `document`, `sticker` (a file, base64, ' +
          'kept by the sandbox as the provider keeps it and downloaded by Parley through the media endpoints, ' +
          '`text` then being the caption), `location`, `buttonReply`, `listReply`, `reaction`; `replyTo` quotes an ' +
          "earlier message. Files follow the provider's types and sizes (400 otherwise); the body may be up to 24 MB.",
        tags: ['sandbox'],
        security: BEARER,
        body: SandboxInboundBody,
        response: { 200: SandboxInboundResponse, ...errorResponses('channel', [400, 401, 403, 404, 502]) },
      },
    },
    async (request) => simulateInbound(ctx, sandbox, principalOf(request), request.body),
  );
};
