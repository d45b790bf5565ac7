import { type Static, Type } from '@sinclair/typebox';
import { MAX_PHONE_INPUT } from '../shared/phone.js';
import { SENT_LOG_BOUND } from './sandbox-sent-log.js';

export const SandboxSentQuery = Type.Object(
  {
    agent: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: "Only what this agent's number was sent; an agent key sees only its own agent's number.",
      }),
    ),
    to: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_PHONE_INPUT,
        description: 'Only requests to this recipient (international format).',
        examples: ['+14155550100'],
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'How many, 1 to 200.' })),
  },
  { additionalProperties: false },
);
export type SandboxSentQuery = Static<typeof SandboxSentQuery>;

export const SandboxSentItem = Type.Object(
  {
    messageId: Type.Union([Type.String(), Type.Null()], {
      description:
        'The provider message ID the sandbox gave the send (what the send answered as `messageId`); for a read ' +
        'receipt, the ID of the message marked read; null when the sandbox refused the request.',
    }),
    from: Type.String({ description: 'The sending number, E.164.' }),
    to: Type.Union([Type.String(), Type.Null()], {
      description: 'The recipient, E.164; null when the request names none the sandbox knows.',
    }),
    type: Type.String({
      description:
        'The Cloud API message type of the body (`text`, `template`, `image`, `document`, `interactive`...), or ' +
        '`read` for a read receipt (with or without a typing indicator).',
    }),
    payload: Type.Object(
      {},
      { additionalProperties: true, description: 'The exact Cloud API request body the sandbox received.' },
    ),
    receivedAt: Type.Number({ description: 'When the sandbox received it, ms since epoch.' }),
    error: Type.Union(
      [
        Type.Object({
          code: Type.Number({ description: "The provider's error code, e.g. 131047 (outside the window)." }),
          message: Type.String(),
        }),
        Type.Null(),
      ],
      { description: 'The provider error the sandbox answered with; null when it accepted the request.' },
    ),
  },
  { title: 'SandboxSentMessage' },
);
export type SandboxSentItem = Static<typeof SandboxSentItem>;

export const SandboxSentList = Type.Object(
  {
    data: Type.Array(SandboxSentItem, {
      description: `Newest first. The sandbox keeps the last ${SENT_LOG_BOUND.toLocaleString('en')} requests of each number.`,
    }),
  },
  { title: 'SandboxSentList' },
);
export type SandboxSentList = Static<typeof SandboxSentList>;
