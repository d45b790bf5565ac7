import { type Static, Type } from '@sinclair/typebox';

export const CHANNEL = 'msgapp';
export const TEMPLATE_LANGUAGE = /^[a-z]{2,3}_[A-Z]{2}$/;
export const MAX_TEXT = 4096;

export const ChannelSendBody = Type.Object(
  {
    channel: Type.String({
      description: `The channel; the only allowed value is \`${CHANNEL}\`.`,
      examples: [CHANNEL],
    }),
    to: Type.String({
      description: 'The recipient: a phone number in international format (+ and country code); normalized to E.164.',
      examples: ['+14155550100'],
    }),
    type: Type.Union([Type.Literal('template'), Type.Literal('message')], {
      description: '`template` (allowed any time) or `message` (free text, only inside the 24-hour window).',
    }),
    convId: Type.Optional(
      Type.String({ description: 'Public ID of the target agent. Required with organization keys.' }),
    ),
    template: Type.Optional(
      Type.Object(
        {
          name: Type.String({ description: 'Name of an approved template.', examples: ['order_update'] }),
          language: Type.String({ description: 'Language code of the template, form xx_XX.', examples: ['en_US'] }),
          parameters: Type.Optional(
            Type.Object(
              {
                body: Type.Optional(Type.Array(Type.String(), { description: 'Body parameters, in order.' })),
                header: Type.Optional(Type.Array(Type.String(), { description: 'Header parameters, in order.' })),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false, description: 'Required when `type` is `template`.' },
      ),
    ),
    message: Type.Optional(
      Type.Object(
        { text: Type.String({ description: `The plain text body, 1 to ${MAX_TEXT} characters.` }) },
        { additionalProperties: false, description: 'Required when `type` is `message`.' },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ChannelSendBody = Static<typeof ChannelSendBody>;

export const ChannelSendResponse = Type.Object({
  success: Type.Literal(true),
  messageType: Type.Union([Type.Literal('template'), Type.Literal('message')], {
    description: 'Echoes the request `type`.',
  }),
  channel: Type.Literal(CHANNEL),
  messageId: Type.String({
    description: "The provider's message ID (`wamid.…`); delivery webhooks and GET /api/messages/{messageId} use it.",
  }),
});
export type ChannelSendResponse = Static<typeof ChannelSendResponse>;
