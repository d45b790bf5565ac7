import { assertAgentAllowed, type Principal, targetAgentId } from '../auth/auth.js';
import type { AppContext } from '../context.js';
import { precompiled, slot } from '../db/precompiled.js';
import {
  applyPendingStatuses,
  insertMessage,
  isWindowOpen,
  markAccepted,
  markSendFailed,
  STATUS_RANK,
} from '../messaging/message.repository.js';
import type { ProviderResult, ProviderSend } from '../messaging/provider.js';
import { toE164 } from '../numbers/number.service.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  CHANNEL,
  type ChannelSendBody,
  type ChannelSendResponse,
  MAX_TEXT,
  TEMPLATE_LANGUAGE,
} from './channel.schemas.js';

export interface ServiceResult<T> {
  readonly status: number;
  readonly body: T;
}

const invalid = (message: string) => new AppError('INVALID_BODY', message);

/** The target agent and its number (of the same organization), in one query. */
const agentWithNumber = precompiled((db) =>
  db
    .selectFrom('agents')
    .leftJoin('messaging_numbers', (join) =>
      join
        .onRef('messaging_numbers.id', '=', 'agents.number_id')
        .onRef('messaging_numbers.org_id', '=', 'agents.org_id'),
    )
    .select([
      'agents.id as agent_id',
      'messaging_numbers.id as number_id',
      'messaging_numbers.phone_number_id',
      'messaging_numbers.access_token_enc',
    ])
    .where('agents.org_id', '=', slot<string>(0))
    .where('agents.id', '=', slot<string>(1)),
);

/** The checks of the body the schema cannot express, each with its own sentence. */
function checkBody(body: ChannelSendBody): { to: string; content: ProviderSend['content'] } {
  if (body.channel !== CHANNEL) {
    throw invalid(`Unsupported channel '${body.channel}'; the only allowed value is '${CHANNEL}'.`);
  }
  if (body.type === 'template' && !body.template) {
    throw invalid("A send with type 'template' needs a 'template' object with 'name' and 'language'.");
  }
  if (body.type === 'message' && !body.message) {
    throw invalid("A send with type 'message' needs a 'message' object with 'text'.");
  }
  const to = toE164(body.to);
  if (!to) {
    throw invalid(`'to' must be a valid phone number in international format, such as +14155550100; got '${body.to}'.`);
  }
  if (body.type === 'message') {
    const text = body.message?.text ?? '';
    if (text.length === 0) throw invalid("'message.text' must not be empty.");
    if (text.length > MAX_TEXT) {
      throw invalid(`'message.text' is ${text.length} characters long; the most is ${MAX_TEXT}.`);
    }
    return { to, content: { kind: 'text', text } };
  }
  const template = body.template;
  if (!template) throw invalid("A send with type 'template' needs a 'template' object.");
  if (!template.name.trim()) throw invalid("'template.name' must not be empty.");
  if (!TEMPLATE_LANGUAGE.test(template.language)) {
    throw invalid(
      `'template.language' must be a language code of the form xx_XX, such as en_US; got '${template.language}'.`,
    );
  }
  return {
    to,
    content: {
      kind: 'template',
      name: template.name,
      language: template.language,
      header: template.parameters?.header ?? [],
      body: template.parameters?.body ?? [],
    },
  };
}

/** Why the provider refused, as a sentence the caller can act on. */
export function rejectionSentence(result: Extract<ProviderResult, { ok: false }>, send: ProviderSend): string {
  const c = send.content;
  const detail = result.message ? ` (${result.message})` : '';
  switch (result.code) {
    case 132001:
      return c.kind === 'template'
        ? `The provider rejected the message: template '${c.name}' does not exist in language '${c.language}' or is not approved.`
        : 'The provider rejected the message: the template does not exist or is not approved.';
    case 132000:
      return `The provider rejected the message: the number of template parameters does not match the template${detail}.`;
    case 131026:
      return `The provider rejected the message: ${send.to} cannot receive it, it is not a user of the messaging app.`;
    case 131047:
      return `The provider rejected the message: more than 24 hours have passed since ${send.to} last wrote to this number; send a template instead.`;
    case 132015:
    case 132016:
      return 'The provider rejected the message: the template is paused or disabled.';
    case 131030:
      return `The provider rejected the message: ${send.to} is not on the allowed list of test recipients.`;
    default:
      break;
  }
  if (result.kind === 'throttled') {
    return `The provider refused the message because a sending rate limit was reached (code ${result.code ?? 'none'}); retry later with backoff.`;
  }
  return `The provider rejected the message${result.code !== null ? ` with code ${result.code}` : ''}${detail}.`;
}

/** A sealed access token that no longer opens (the secret key changed) is the server's problem, not the caller's. */
function openToken(ctx: AppContext, sealed: string): string {
  try {
    return ctx.messaging.secrets.open(sealed);
  } catch (err) {
    ctx.logger.error({ err }, 'the access token of a messaging number cannot be opened with the secret key');
    throw new AppError(
      'PROVIDER_UNAVAILABLE',
      "This agent's messaging number has unusable credentials; an administrator must check the secret key or add the number again.",
    );
  }
}

/**
 * The domain verb of POST /api/channels/send. Rule order follows spec 4.1: the body (channel,
 * fields, type and its object), then the target agent (convId needed with an organization key;
 * another agent's convId 403; unknown 404), then its number, then the window, then the provider.
 * The send is never repeated here: a provider failure is reported, not retried.
 */
export async function sendChannelMessage(
  ctx: AppContext,
  principal: Principal,
  body: ChannelSendBody,
): Promise<ServiceResult<ChannelSendResponse>> {
  const { to, content } = checkBody(body);

  const agentId = targetAgentId(principal, body.convId);
  if (agentId === undefined) {
    throw invalid("'convId' is required with an organization key: name the agent whose number sends the message.");
  }
  assertAgentAllowed(principal, agentId);

  const row = (await agentWithNumber(ctx.db, [principal.orgId, agentId])).rows[0];
  if (!row) throw new AppError('NOT_FOUND', `No agent with ID '${agentId}' in this organization.`);
  if (!row.number_id || !row.phone_number_id) {
    throw invalid(`Agent '${agentId}' has no messaging number assigned, so it cannot send messages.`);
  }
  const numberId = row.number_id;

  const now = ctx.clock.now();
  if (content.kind === 'text' && !(await isWindowOpen(ctx.db, numberId, to, now))) {
    throw invalid(
      `${to} has not written to this agent's number in the last 24 hours, so free text cannot be sent; use type 'template' with an approved template.`,
    );
  }

  const send: ProviderSend = {
    phoneNumberId: row.phone_number_id,
    accessToken: row.access_token_enc ? openToken(ctx, row.access_token_enc) : 'sandbox',
    to,
    content,
    callbackData: newId('msg'),
  };
  // Stored before the provider is called, so a status webhook can never outrun the record.
  await insertMessage(ctx.db, {
    id: send.callbackData,
    org_id: principal.orgId,
    agent_id: agentId,
    number_id: numberId,
    to_phone: to,
    type: body.type,
    template_name: content.kind === 'template' ? content.name : null,
    provider_message_id: null,
    status: 'pending',
    status_rank: STATUS_RANK.pending,
    error_code: null,
    error_message: null,
    created_at: now,
    updated_at: now,
  });

  const result = await ctx.messaging.provider.send(send);
  const at = ctx.clock.now();
  if (!result.ok) {
    if (result.kind === 'rejected' || result.kind === 'throttled') {
      const sentence = rejectionSentence(result, send);
      await markSendFailed(ctx.db, send.callbackData, 'rejected', result.code, sentence, at);
      throw new AppError('PROVIDER_REJECTED', sentence);
    }
    const sentence =
      result.kind === 'config'
        ? "The messaging provider refused this number's credentials; an administrator must check its access token."
        : `The messaging provider could not be reached or failed (${result.message}); the message was not retried.`;
    await markSendFailed(ctx.db, send.callbackData, 'unconfirmed', result.code, sentence, at);
    throw new AppError('PROVIDER_UNAVAILABLE', sentence);
  }
  await markAccepted(ctx.db, send.callbackData, result.messageId, at);
  await applyPendingStatuses(ctx.db, send.callbackData, result.messageId);
  return {
    status: 200,
    body: { success: true, messageType: body.type, channel: CHANNEL, messageId: result.messageId },
  };
}
