import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { assertAgentAllowed, targetAgentId } from '../auth/auth.js';
import type { AppContext } from '../context.js';
import { BEARER, principalOf, requireKey } from '../http/auth.js';
import { errorResponses } from '../http/errors.js';
import { toE164 } from '../numbers/number.service.js';
import { AppError } from '../shared/errors.js';

const SandboxInboundBody = Type.Object(
  {
    convId: Type.Optional(
      Type.String({ description: 'The agent whose number receives the message; required with organization keys.' }),
    ),
    from: Type.String({ description: 'The user writing in, E.164.', examples: ['+14155550100'] }),
    text: Type.String({ description: 'The message text.' }),
    name: Type.Optional(Type.String({ description: "The user's profile name." })),
  },
  { additionalProperties: false },
);

const SandboxInboundResponse = Type.Object({
  success: Type.Literal(true),
  messageId: Type.String({ description: "The inbound message's provider ID." }),
});

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
          'opens the 24-hour window and records the end user. Answers once the webhook has been processed. ' +
          'Same agent rules as a send. Absent when a real provider is configured.',
        tags: ['sandbox'],
        security: BEARER,
        body: SandboxInboundBody,
        response: { 200: SandboxInboundResponse, ...errorResponses('channel', [400, 401, 403, 404, 502]) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const body = request.body;
      const from = toE164(body.from);
      if (!from)
        throw new AppError(
          'INVALID_BODY',
          `'from' must be a valid phone number in international format; got '${body.from}'.`,
        );
      if (!body.text) throw new AppError('INVALID_BODY', "'text' must not be empty.");
      const agentId = targetAgentId(principal, body.convId);
      if (agentId === undefined) throw new AppError('INVALID_BODY', "'convId' is required with an organization key.");
      assertAgentAllowed(principal, agentId);
      const row = await ctx.db
        .selectFrom('agents')
        .leftJoin('messaging_numbers', 'messaging_numbers.id', 'agents.number_id')
        .select(['agents.id', 'messaging_numbers.phone', 'messaging_numbers.phone_number_id'])
        .where('agents.org_id', '=', principal.orgId)
        .where('agents.id', '=', agentId)
        .executeTakeFirst();
      if (!row) throw new AppError('NOT_FOUND', `No agent with ID '${agentId}' in this organization.`);
      if (!row.phone || !row.phone_number_id) {
        throw new AppError('INVALID_BODY', `Agent '${agentId}' has no messaging number assigned.`);
      }
      let messageId: string;
      try {
        ({ messageId } = await sandbox.deliverInbound({
          phoneNumberId: row.phone_number_id,
          displayPhoneNumber: row.phone,
          from,
          text: body.text,
          ...(body.name !== undefined ? { name: body.name } : {}),
        }));
      } catch (err) {
        request.log.warn({ err }, 'sandbox inbound delivery failed');
        throw new AppError('PROVIDER_UNAVAILABLE', 'The sandbox could not deliver the inbound message webhook.');
      }
      await ctx.messaging.webhooks.idle();
      return { success: true as const, messageId };
    },
  );
};
