import { assertAgentAllowed, type Principal, targetAgentId } from '../auth/index.js';
import type { OutboundContent, ProviderSend } from '../messaging/index.js';
import type { AfterAnswer } from '../shared/after-answer.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { parseInternationalPhone } from '../shared/phone.js';
import {
  CHANNEL,
  type ChannelSendBody,
  type ChannelSendResponse,
  MAX_BODY_PARAMETERS,
  MAX_HEADER_PARAMETERS,
  TEMPLATE_LANGUAGE,
} from './channel.schemas.js';
import type { OutboundMediaDeps } from './outbound-media.js';
import { checkOutboundMedia, checkRichMessage } from './rich-checks.js';
import { richSendOf } from './rich-send.js';
import { type SendDeps, type SendFromAgentInput, sendFromAgent } from './send-from-agent.js';
import { sendFailureError } from './send-outcome.js';

export { rejectionSentence, SendOutcomeUnknown } from './send-outcome.js';

/** What an API send uses: a send's dependencies, and where its after-answer work runs. */
export type ChannelSendDeps = SendDeps & OutboundMediaDeps & { readonly afterAnswer: AfterAnswer };

export interface ServiceResult<T> {
  readonly status: number;
  readonly body: T;
}

const invalid = (message: string) => new AppError('INVALID_BODY', message);

/** Characters as the provider counts them: code points, not UTF-16 units. */
const lengthOf = (text: string) => {
  let n = 0;
  for (const _ of text) n++;
  return n;
};

/** Template parameters of one component: none blank, and at most `max` characters together. */
export function checkParameters(
  values: readonly string[],
  field: string,
  max: number,
  prefix = 'template.parameters',
): readonly string[] {
  let total = 0;
  for (const [i, value] of values.entries()) {
    if (!value.trim()) throw invalid(`'${prefix}.${field}.${i}' must not be empty.`);
    total += lengthOf(value);
  }
  if (total > max) {
    throw invalid(`'${prefix}.${field}' holds ${total} characters in all; the most is ${max}.`);
  }
  return values;
}

/** `to` as E.164, or the sentence saying why it is not a phone number a message can go to. */
export function parseRecipient(to: string): string {
  const phone = parseInternationalPhone(to);
  if (!phone.ok) {
    throw invalid(
      phone.problem === 'extension'
        ? `'to' must be a phone number without an extension; got '${clip(to)}'.`
        : `'to' must be a valid phone number in international format, such as +14155550100; got '${clip(to)}'.`,
    );
  }
  return phone.e164;
}

/** The checks of the body the schema cannot express, each with its own sentence. */
export function checkBody(body: ChannelSendBody): {
  to: string;
  content: ProviderSend['content'];
  rich?: OutboundContent | undefined;
} {
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
  const to = parseRecipient(body.to);
  if (body.type === 'message') {
    const text = body.message?.text ?? '';
    if (text.length === 0) throw invalid("'message.text' must not be empty.");
    if (!text.trim()) throw invalid("'message.text' must not be blank: the provider refuses a text of only spaces.");
    const message = body.message;
    // Only a send that carries more than text pays for its checks.
    const rich =
      message && (message.media || message.buttons || message.list || message.replyTo !== undefined)
        ? checkRichMessage(message)
        : undefined;
    if (!rich) return { to, content: { kind: 'text', text } };
    return {
      to,
      rich,
      content: {
        kind: 'text',
        text,
        ...(rich.buttons ? { buttons: rich.buttons } : {}),
        ...(rich.list ? { list: rich.list } : {}),
        ...(rich.replyTo !== undefined ? { replyTo: rich.replyTo } : {}),
      },
    };
  }
  const template = body.template;
  if (!template) throw invalid("A send with type 'template' needs a 'template' object.");
  if (!template.name.trim()) throw invalid("'template.name' must not be empty.");
  if (!TEMPLATE_LANGUAGE.test(template.language)) {
    throw invalid(
      `'template.language' must be a language code of the form xx_XX, such as en_US; got '${clip(template.language)}'.`,
    );
  }
  const headerMedia = template.headerMedia
    ? checkOutboundMedia(template.headerMedia, 'template.headerMedia')
    : undefined;
  if (headerMedia && (template.parameters?.header?.length ?? 0) > 0) {
    throw new AppError(
      'INVALID_BODY',
      "'template.parameters.header' must be empty with 'template.headerMedia': a template's header is either text or a file.",
      { details: { field: 'template.parameters.header' } },
    );
  }
  return {
    to,
    ...(headerMedia ? { rich: { headerMedia } } : {}),
    content: {
      kind: 'template',
      name: template.name,
      language: template.language,
      header: checkParameters(template.parameters?.header ?? [], 'header', MAX_HEADER_PARAMETERS),
      body: checkParameters(template.parameters?.body ?? [], 'body', MAX_BODY_PARAMETERS),
    },
  };
}

/**
 * The domain verb of POST /api/channels/send. Rule order follows spec 4.1: the body (channel,
 * fields, type and its object), then the target agent (convId needed with an organization key;
 * another agent's convId 403; unknown 404), then its number, then the window, then the provider.
 * The message joins the open conversation of the agent with the recipient, or opens one (a new
 * recipient becomes an end user of origin `manual`). The send is never repeated here: a provider
 * failure is reported, not retried.
 */
export async function sendChannelMessage(
  ctx: ChannelSendDeps,
  principal: Principal,
  body: ChannelSendBody,
  /** The request's cached key awaits the key epoch (see `SendFromAgentInput.confirmKey`). */
  confirmKey?: SendFromAgentInput['confirmKey'],
): Promise<ServiceResult<ChannelSendResponse>> {
  const checked = checkBody(body);
  const { to } = checked;

  const agentId = targetAgentId(principal, body.convId);
  if (agentId === undefined) {
    throw invalid("'convId' is required with an organization key: name the agent whose number sends the message.");
  }
  assertAgentAllowed(principal, agentId);
  const reader = { orgId: principal.orgId, agentId: principal.scope === 'agent' ? agentId : null };
  const { content, rich } = checked.rich
    ? await richSendOf(ctx, reader, checked.content, checked.rich)
    : { content: checked.content, rich: undefined };

  const result = await sendFromAgent(ctx, {
    orgId: principal.orgId,
    agentId,
    to,
    content,
    rich,
    conversation: { origin: 'manual', required: false },
    confirmKey,
    afterAnswer: ctx.afterAnswer,
  });
  if (!result.ok) throw sendFailureError(result);
  return {
    status: 200,
    body: {
      success: true,
      messageType: body.type,
      channel: CHANNEL,
      messageId: result.messageId,
      ...(result.conversationId ? { conversationId: result.conversationId } : {}),
    },
  };
}
