import { assertAgentAllowed, type Principal } from '../auth/index.js';
import { CHANNEL, MAX_BODY_PARAMETERS, MAX_HEADER_PARAMETERS } from '../channels/channel.schemas.js';
import { type ChannelSendDeps, checkParameters, parseRecipient } from '../channels/channel.service.js';
import { sendFailureError, sendFromAgent } from '../channels/index.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { MAX_CONTEXT_BYTES, type TriggerStartBody, type TriggerStartResponse } from './trigger.schemas.js';
import { findTrigger } from './trigger.service.js';

const invalid = (message: string) => new AppError('INVALID_BODY', message);

/**
 * The domain verb of POST /api/triggers/<agentId>/<triggerId>: the body (channel, `to`, parameters,
 * context), the agent (403 another agent's key, 404 not in the organization), the trigger (404 not
 * the agent's, 400 disabled), then the send of its opening template, which finds or makes the end
 * user (origin `manual`, filled from `endUser`) and opens or joins the conversation.
 */
export async function startTrigger(
  ctx: ChannelSendDeps,
  principal: Principal,
  agentId: string,
  triggerId: string,
  body: TriggerStartBody,
): Promise<TriggerStartResponse> {
  if (body.channel !== undefined && body.channel !== CHANNEL) {
    throw invalid(`Unsupported channel '${clip(body.channel)}'; the only allowed value is '${CHANNEL}'.`);
  }
  const to = parseRecipient(body.to);
  const header = checkParameters(body.parameters?.header ?? [], 'header', MAX_HEADER_PARAMETERS, 'parameters');
  const bodyParameters = checkParameters(body.parameters?.body ?? [], 'body', MAX_BODY_PARAMETERS, 'parameters');
  const context = body.context ?? null;
  if (context !== null && Buffer.byteLength(JSON.stringify(context)) > MAX_CONTEXT_BYTES) {
    throw invalid(`'context' must be at most ${MAX_CONTEXT_BYTES / 1024} KB of JSON.`);
  }

  // The route checked the agent before the body (403 another agent's key, 404 not in the organization).
  assertAgentAllowed(principal, agentId);
  const trigger = await findTrigger(ctx.db, principal.orgId, agentId, triggerId);
  if (!trigger) {
    throw new AppError('NOT_FOUND', `Agent '${clip(agentId, 64)}' has no trigger '${clip(triggerId, 64)}'.`);
  }
  if (!trigger.enabled) throw invalid(`Trigger '${trigger.id}' is disabled; enable it before starting conversations.`);

  const result = await sendFromAgent(ctx, {
    orgId: principal.orgId,
    agentId,
    to,
    content: { kind: 'template', name: trigger.template, language: trigger.language, header, body: bodyParameters },
    conversation: {
      origin: 'manual',
      endUser: body.endUser,
      triggerId: trigger.id,
      context,
      required: true,
    },
    afterAnswer: ctx.afterAnswer,
  });
  if (!result.ok) throw sendFailureError(result);
  if (!result.conversationId || !result.endUserId) {
    throw new AppError('INTERNAL', 'The conversation of a trigger was not recorded.');
  }
  return {
    success: true,
    conversationId: result.conversationId,
    endUserId: result.endUserId,
    messageId: result.messageId,
    created: result.created,
  };
}
