import { type Static, Type } from '@sinclair/typebox';
import { TemplateParameters } from '../channels/channel.schemas.js';
import { MAX_PHONE_INPUT } from '../shared/phone.js';

/** The largest `context` a trigger keeps on its conversation (its JSON, in bytes). */
export const MAX_CONTEXT_BYTES = 16 * 1024;

export const TriggerParams = Type.Object({
  agentId: Type.String({ minLength: 1, maxLength: 64, description: 'The agent whose entry point this is.' }),
  triggerId: Type.String({ minLength: 1, maxLength: 64, description: 'The trigger, unique within the agent.' }),
});

export const TriggerStartBody = Type.Object(
  {
    to: Type.String({
      maxLength: MAX_PHONE_INPUT,
      description: 'The end user: a phone number in international format; normalized to E.164.',
      examples: ['+14155550100'],
    }),
    channel: Type.Optional(
      Type.String({ maxLength: 64, description: 'The channel; the only allowed value (and the default) is `msgapp`.' }),
    ),
    parameters: Type.Optional(TemplateParameters),
    endUser: Type.Optional(
      Type.Object(
        {
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 400 })),
          email: Type.Optional(Type.String({ maxLength: 320 })),
          tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 100 })),
        },
        {
          additionalProperties: false,
          description:
            'Fields of the end user when this phone has no record yet (it is then made with origin `manual`); an ' +
            'existing record is never changed.',
        },
      ),
    ),
    context: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description: `Any JSON object (at most ${MAX_CONTEXT_BYTES / 1024} KB): kept on the conversation and handed to the agent in conversation.started.`,
          examples: [{ orderId: 'A-1042' }],
        },
      ),
    ),
  },
  {
    title: 'TriggerStartRequest',
    examples: [
      {
        to: '+14155550100',
        parameters: { body: ['A-1042'] },
        endUser: { name: 'Ada Lovelace', email: 'ada@example.com', tags: ['vip'] },
        context: { orderId: 'A-1042' },
      },
    ],
    additionalProperties: false,
  },
);
export type TriggerStartBody = Static<typeof TriggerStartBody>;

export const TriggerStartResponse = Type.Object(
  {
    success: Type.Literal(true),
    conversationId: Type.String({ description: 'The conversation opened, or the open one reused.' }),
    endUserId: Type.String({ description: 'The end user, found by phone or made.' }),
    messageId: Type.String({ description: "The provider's message ID of the opening template." }),
    created: Type.Boolean({
      description: 'false when an open conversation of the agent with this end user was reused.',
    }),
  },
  {
    title: 'TriggerStartResponse',
    examples: [
      {
        success: true,
        conversationId: 'cnv_2bYw8sKq4nLm6RtPz0XcVa',
        endUserId: 'eu_3kTq9ZpW0bLm2XcV7nR4sA',
        messageId: 'wamid.HBgLMTQxNTU1NTAxMDA',
        created: true,
      },
    ],
  },
);
export type TriggerStartResponse = Static<typeof TriggerStartResponse>;
