import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { MAX_PHONE_INPUT } from '../shared/phone.js';
import { simulateInbound } from './sandbox.service.js';

const SandboxInboundBody = Type.Object(
  {
    convId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'The agent whose number receives the message; required with organization keys.',
      }),
    ),
    from: Type.String({
      maxLength: MAX_PHONE_INPUT,
      description: 'The user writing in, in international format.',
      examples: ['+14155550100'],
    }),
    text: Type.String({ maxLength: 4096, description: 'The message text.' }),
    name: Type.Optional(Type.String({ maxLength: 256, description: "The user's profile name." })),
  },
  { title: 'SandboxInboundRequest', additionalProperties: false },
);

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
      onRequest: [requireKey(ctx, 'channels')],
      schema: {
        summary: "Sandbox only: simulate a user writing to an agent's number",
        description:
          "The built-in sandbox delivers a signed inbound message webhook from `from` to the agent's number, which " +
          'opens the 24-hour window and records the end user. Answers once Parley has applied that webhook (502 if ' +
          'it could not, or not within 10 seconds). Same agent rules as a send. Absent when a real provider is configured.',
        tags: ['sandbox'],
        security: BEARER,
        body: SandboxInboundBody,
        response: { 200: SandboxInboundResponse, ...errorResponses('channel', [400, 401, 403, 404, 502]) },
      },
    },
    async (request) => simulateInbound(ctx, sandbox, principalOf(request), request.body),
  );
};
