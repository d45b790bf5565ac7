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
import { parseInternationalPhone, windowKey } from '../numbers/phone.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  CHANNEL,
  type ChannelSendBody,
  type ChannelSendResponse,
  MAX_BODY_PARAMETERS,
  MAX_HEADER_PARAMETERS,
  TEMPLATE_LANGUAGE,
} from './channel.schemas.js';

export interface ServiceResult<T> {
  readonly status: number;
  readonly body: T;
}

/**
 * A 502 after which the provider may have accepted the message (it did not answer in time, the
 * connection was lost after the request went out). The idempotency layer keeps this answer under
 * the key, so a retry with the same key is told so instead of sending a second time.
 */
export class SendOutcomeUnknown extends AppError {
  constructor(message: string) {
    super('PROVIDER_UNAVAILABLE', message);
    this.name = 'SendOutcomeUnknown';
  }
}

const invalid = (message: string) => new AppError('INVALID_BODY', message);

/** Characters as the provider counts them: code points, not UTF-16 units. */
const lengthOf = (text: string) => {
  let n = 0;
  for (const _ of text) n++;
  return n;
};

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

/** Template parameters of one component: none blank, and at most `max` characters together. */
function checkParameters(values: readonly string[], field: string, max: number): readonly string[] {
  let total = 0;
  for (const [i, value] of values.entries()) {
    if (!value.trim()) throw invalid(`'template.parameters.${field}.${i}' must not be empty.`);
    total += lengthOf(value);
  }
  if (total > max) {
    throw invalid(`'template.parameters.${field}' holds ${total} characters in all; the most is ${max}.`);
  }
  return values;
}

/** The checks of the body the schema cannot express, each with its own sentence. */
function checkBody(body: ChannelSendBody): { to: string; content: ProviderSend['content'] } {
  if (body.channel !== CHANNEL) {
    throw invalid(`Unsupported channel '${clip(body.channel)}'; the only allowed value is '${CHANNEL}'.`);
  }
  if (body.type === 'template' && !body.template) {
    throw invalid("A send with type 'template' needs a 'template' object with 'name' and 'language'.");
  }
  if (body.type === 'message' && !body.message) {
    throw invalid("A send with type 'message' needs a 'message' object with 'text'.");
  }
  if (body.type === 'template' && body.message) {
    throw invalid("A send with type 'template' takes a 'template' object only; remove 'message'.");
  }
  if (body.type === 'message' && body.template) {
    throw invalid("A send with type 'message' takes a 'message' object only; remove 'template'.");
  }
  const phone = parseInternationalPhone(body.to);
  if (!phone.ok) {
    throw invalid(
      phone.problem === 'extension'
        ? `'to' must be a phone number without an extension; got '${clip(body.to)}'.`
        : `'to' must be a valid phone number in international format, such as +14155550100; got '${clip(body.to)}'.`,
    );
  }
  const to = phone.e164;
  if (body.type === 'message') {
    const text = body.message?.text ?? '';
    if (text.length === 0) throw invalid("'message.text' must not be empty.");
    if (!text.trim()) throw invalid("'message.text' must not be blank: the provider refuses a text of only spaces.");
    return { to, content: { kind: 'text', text } };
  }
  const template = body.template;
  if (!template) throw invalid("A send with type 'template' needs a 'template' object.");
  if (!template.name.trim()) throw invalid("'template.name' must not be empty.");
  if (!TEMPLATE_LANGUAGE.test(template.language)) {
    throw invalid(
      `'template.language' must be a language code of the form xx_XX, such as en_US; got '${clip(template.language)}'.`,
    );
  }
  return {
    to,
    content: {
      kind: 'template',
      name: template.name,
      language: template.language,
      header: checkParameters(template.parameters?.header ?? [], 'header', MAX_HEADER_PARAMETERS),
      body: checkParameters(template.parameters?.body ?? [], 'body', MAX_BODY_PARAMETERS),
    },
  };
}

/** Why the provider refused, as a sentence the caller can act on. */
export function rejectionSentence(result: Extract<ProviderResult, { ok: false }>, send: ProviderSend): string {
  const c = send.content;
  const detail = result.message ? ` (${clip(result.message, 300)})` : '';
  switch (result.code) {
    case 132001:
      return c.kind === 'template'
        ? `The provider rejected the message: template '${clip(c.name, 100)}' does not exist in language '${c.language}' or is not approved.`
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
  if (!row) throw new AppError('NOT_FOUND', `No agent with ID '${clip(agentId, 64)}' in this organization.`);
  if (!row.number_id || !row.phone_number_id) {
    throw invalid(`Agent '${clip(agentId, 64)}' has no messaging number assigned, so it cannot send messages.`);
  }
  const numberId = row.number_id;

  const now = ctx.clock.now();
  if (content.kind === 'text' && !(await isWindowOpen(ctx.db, numberId, windowKey(to), now))) {
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
    conversation_id: null,
  });

  const result = await ctx.messaging.provider.send(send);
  const at = ctx.clock.now();
  // From here on the provider has answered: bookkeeping that fails is logged, never the caller's
  // answer (the stored message and its callback data still let later statuses find it).
  const record = async (what: string, write: () => Promise<unknown>) => {
    try {
      await write();
    } catch (err) {
      ctx.logger.error(
        { err, messageId: send.callbackData, providerMessageId: result.ok ? result.messageId : undefined },
        `the provider answered a send, but recording ${what} failed`,
      );
    }
  };
  if (!result.ok) {
    if (result.kind === 'rejected' || result.kind === 'throttled') {
      const sentence = rejectionSentence(result, send);
      await record('the rejection', () =>
        markSendFailed(ctx.db, send.callbackData, 'rejected', result.code, sentence, at),
      );
      throw new AppError('PROVIDER_REJECTED', sentence);
    }
    if (result.kind === 'unknown') {
      const sentence =
        `The messaging provider's answer is missing (${result.message}), so whether it accepted the message is ` +
        `unknown; it was not retried. GET /api/messages/${send.callbackData} ` +
        "shows the message's status once the provider reports on it; send again (with a new Idempotency-Key) only if it never does.";
      await record('the unknown outcome', () =>
        markSendFailed(ctx.db, send.callbackData, 'unconfirmed', null, sentence, at),
      );
      throw new SendOutcomeUnknown(sentence);
    }
    const sentence =
      result.kind === 'config'
        ? "The messaging provider refused this number's credentials; an administrator must check its access token."
        : `The messaging provider could not be reached or failed (${result.message}); the message was not sent and was not retried.`;
    await record('the failure', () =>
      markSendFailed(ctx.db, send.callbackData, 'unconfirmed', result.code, sentence, at),
    );
    throw new AppError('PROVIDER_UNAVAILABLE', sentence);
  }
  await record('the acceptance', async () => {
    await markAccepted(ctx.db, send.callbackData, result.messageId, at);
    await applyPendingStatuses(ctx.db, send.callbackData, result.messageId, send.phoneNumberId);
  });
  return {
    status: 200,
    body: { success: true, messageType: body.type, channel: CHANNEL, messageId: result.messageId },
  };
}
