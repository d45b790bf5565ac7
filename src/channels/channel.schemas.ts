import { type Static, Type } from '@sinclair/typebox';
import { MAX_PHONE_INPUT } from '../shared/phone.js';
import { ListSchema, MAX_RICH_TEXT, OutboundMediaSchema, ReplyButtonsSchema, ReplyToSchema } from './rich.schemas.js';

export const CHANNEL = 'msgapp';
export const TEMPLATE_LANGUAGE = /^[a-z]{2,3}_[A-Z]{2}$/;

/*
 * Lengths are counted in characters (Unicode code points, so an emoji is one), as the provider
 * counts them; the schema validator counts the same way.
 */
/** Free text: the provider's limit. */
export const MAX_TEXT = 4096;
/** Template body text: the provider's limit for the whole body, so for its parameters together too. */
export const MAX_BODY_PARAMETERS = 1024;
/** Template header text: the provider's limit. */
export const MAX_HEADER_PARAMETERS = 60;
export const MAX_TEMPLATE_NAME = 512;
export const MAX_LANGUAGE = 16;
export const MAX_CONV_ID = 64;

const MessageType = Type.Unsafe<'template' | 'message'>({
  type: 'string',
  enum: ['template', 'message'],
  description: '`template` (allowed any time) or `message` (free text, only inside the 24-hour window).',
});

/** Template parameters: `body` and `header`, each strings in the positional order the template expects. */
export const TemplateParameters = Type.Object(
  {
    body: Type.Optional(
      Type.Array(Type.String({ maxLength: MAX_BODY_PARAMETERS }), {
        maxItems: MAX_BODY_PARAMETERS,
        description: `Body parameters, in order; none empty, at most ${MAX_BODY_PARAMETERS} characters together.`,
      }),
    ),
    header: Type.Optional(
      Type.Array(Type.String({ maxLength: MAX_HEADER_PARAMETERS }), {
        maxItems: MAX_HEADER_PARAMETERS,
        description: `Header parameters, in order; none empty, at most ${MAX_HEADER_PARAMETERS} characters together.`,
      }),
    ),
  },
  { title: 'TemplateParameters', additionalProperties: false },
);
export type TemplateParameters = Static<typeof TemplateParameters>;

export const ChannelSendBody = Type.Object(
  {
    channel: Type.String({
      maxLength: 64,
      description: `The channel; the only allowed value is \`${CHANNEL}\`.`,
      examples: [CHANNEL],
    }),
    to: Type.String({
      maxLength: MAX_PHONE_INPUT,
      description:
        'The recipient: a phone number in international format (+ and country code, no extension); normalized to E.164.',
      examples: ['+14155550100'],
    }),
    type: MessageType,
    convId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_CONV_ID,
        description: 'Public ID of the target agent. Required with organization keys.',
      }),
    ),
    template: Type.Optional(
      Type.Object(
        {
          name: Type.String({
            maxLength: MAX_TEMPLATE_NAME,
            description: 'Name of an approved template.',
            examples: ['order_update'],
          }),
          language: Type.String({
            maxLength: MAX_LANGUAGE,
            description: 'Language code of the template, form xx_XX.',
            examples: ['en_US'],
          }),
          parameters: Type.Optional(TemplateParameters),
          /** The header file of a template whose header is an image, a video or a document. */
          headerMedia: Type.Optional(OutboundMediaSchema),
        },
        { additionalProperties: false, description: 'Required when `type` is `template`; refused with `message`.' },
      ),
    ),
    message: Type.Optional(
      Type.Object(
        {
          text: Type.String({
            maxLength: MAX_TEXT,
            description:
              `The plain text body, 1 to ${MAX_TEXT} characters (code points), not only spaces; with \`media\` its ` +
              `caption, with \`buttons\` or \`list\` the body above them (then at most ${MAX_RICH_TEXT}).`,
          }),
          media: Type.Optional(OutboundMediaSchema),
          buttons: Type.Optional(ReplyButtonsSchema),
          list: Type.Optional(ListSchema),
          replyTo: Type.Optional(ReplyToSchema),
        },
        {
          additionalProperties: false,
          description:
            'Required when `type` is `message`; refused with `template`. At most one of `media`, `buttons`, `list`.',
        },
      ),
    ),
  },
  {
    title: 'ChannelSendRequest',
    examples: [
      {
        channel: 'msgapp',
        to: '+14155550100',
        type: 'template',
        convId: 'agt_7hQk2LmN9pRs4TuVw6XyZa',
        template: { name: 'order_update', language: 'en_US', parameters: { body: ['A-1042'] } },
      },
      {
        channel: 'msgapp',
        to: '+14155550100',
        type: 'message',
        convId: 'agt_7hQk2LmN9pRs4TuVw6XyZa',
        message: {
          text: 'Sorry about the parcel. What would you like us to do?',
          buttons: [
            { id: 'refund', title: 'Refund' },
            { id: 'replace', title: 'Send a new one' },
          ],
          replyTo: 'wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTdF',
        },
      },
      {
        channel: 'msgapp',
        to: '+14155550100',
        type: 'message',
        convId: 'agt_7hQk2LmN9pRs4TuVw6XyZa',
        message: {
          text: 'Your invoice',
          media: { id: 'med_4ZpQ8sKq2nLm6RtPz0XcVa', kind: 'document', filename: 'invoice-A1042.pdf' },
        },
      },
    ],
    additionalProperties: false,
  },
);
export type ChannelSendBody = Static<typeof ChannelSendBody>;

export const ChannelSendResponse = Type.Object(
  {
    success: Type.Literal(true),
    messageType: Type.Union([Type.Literal('template'), Type.Literal('message')], {
      description: 'Echoes the request `type`.',
    }),
    channel: Type.Literal(CHANNEL),
    messageId: Type.String({
      description: "The provider's message ID (`wamid.…`); delivery webhooks and GET /api/messages/{messageId} use it.",
    }),
    conversationId: Type.Optional(
      Type.String({
        description:
          'The conversation the message joined (or opened): GET /api/conversations/{id}. Absent when the recipient ' +
          'cannot be an end user (a phone the end-user records refuse).',
      }),
    ),
  },
  {
    title: 'ChannelSendResponse',
    examples: [
      {
        success: true,
        messageType: 'template',
        channel: 'msgapp',
        messageId: 'wamid.HBgLMTQxNTU1NTAxMDA',
        conversationId: 'cnv_2bYw8sKq4nLm6RtPz0XcVa',
      },
    ],
  },
);
export type ChannelSendResponse = Static<typeof ChannelSendResponse>;

export const SendCheckResponse = Type.Object(
  {
    success: Type.Literal(true),
    wouldSend: Type.Boolean({ description: 'Whether the send would go to the provider now (every rule ok).' }),
    checks: Type.Array(
      Type.Object({
        rule: Type.String({
          description: 'agent, number, window, template, parameters, consent or rate_limit, in that order.',
        }),
        ok: Type.Boolean(),
        reason: Type.Optional(
          Type.String({ description: 'Why not: the sentence the send would have answered; or a note on an ok.' }),
        ),
      }),
    ),
  },
  {
    title: 'SendCheckResponse',
    examples: [
      {
        success: true,
        wouldSend: false,
        checks: [
          { rule: 'agent', ok: true },
          { rule: 'number', ok: true },
          { rule: 'window', ok: true, reason: 'a template may be sent at any time' },
          { rule: 'template', ok: true },
          { rule: 'parameters', ok: false, reason: 'Template order_update (en_US) expects 2 body parameters, got 1.' },
          { rule: 'consent', ok: true },
          { rule: 'rate_limit', ok: true },
        ],
      },
    ],
  },
);
export type SendCheckResponse = Static<typeof SendCheckResponse>;
