import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { ListSchema, OutboundMediaSchema, ReplyButtonsSchema } from '../channels/rich.schemas.js';
import { INBOUND_FIELDS, InboundMediaSchema } from '../messaging/inbound.schemas.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const MAX_INTEGER = Number.MAX_SAFE_INTEGER;

export const Handler = Type.Union([Type.Literal('bot'), Type.Literal('human')], {
  description: "Who answers the end user: `bot` (the agent's hook) or `human` (people, in the dashboard's inbox).",
});

export const Assignee = Type.Object(
  {
    id: Type.String({ description: 'The person of the dashboard (`usr_...`).' }),
    name: Type.String({ description: 'Their name as the dashboard shows it (their email address).' }),
  },
  { description: 'The person the conversation is assigned to.' },
);

export const HandoffSchema = Type.Object(
  {
    reason: Nullable(
      Type.String({
        description:
          'Why: as the agent gave it, `no_bot` (the agent has no hook), `bot_unreachable` (its hook did not answer in time) or `taken_over` (a person took it).',
      }),
    ),
    note: Nullable(Type.String({ description: 'A note for the people who take it, as the agent gave it.' })),
    by: Type.Union([Type.Literal('agent'), Type.Literal('user'), Type.Literal('parley')], {
      description: 'Who handed it over: the agent (its API key), a person of the dashboard, or Parley (a fallback).',
    }),
    at: Type.Number({ description: 'ms since epoch.' }),
  },
  { description: 'The handoff that gave the conversation to people; null while the bot handles it.' },
);

export const ConversationSchema = Type.Object(
  {
    id: Type.String({ description: 'The conversation ID (`cnv_...`).' }),
    agentId: Type.String(),
    endUserId: Type.String(),
    triggerId: Nullable(Type.String({ description: 'The trigger that opened it, if one did.' })),
    campaignId: Nullable(Type.String({ description: 'The campaign that opened it, if one did.' })),
    status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
    context: Nullable(Type.Object({}, { additionalProperties: true, description: "The trigger's context." })),
    startedAt: Type.Number({ description: 'ms since epoch.' }),
    lastMessageAt: Type.Number({ description: 'Time of the last message either way, ms since epoch.' }),
    closedAt: Nullable(Type.Number({ description: 'ms since epoch.' })),
    handler: Handler,
    assignee: Nullable(Assignee),
    handoff: Nullable(HandoffSchema),
  },
  {
    title: 'Conversation',
    examples: [
      {
        id: 'cnv_2bYw8sKq4nLm6RtPz0XcVa',
        agentId: 'agt_7hQk2LmN9pRs4TuVw6XyZa',
        endUserId: 'eu_3kTq9ZpW0bLm2XcV7nR4sA',
        triggerId: 'order_shipped',
        campaignId: null,
        status: 'open',
        context: { orderId: 'A-1042' },
        startedAt: 1795386969828,
        lastMessageAt: 1795386975120,
        closedAt: null,
        handler: 'human',
        assignee: { id: 'usr_5fGh7JkL9mNp2QrS4tUv6W', name: 'ana@example.com' },
        handoff: {
          reason: 'asked for a human',
          note: 'Wants to change the delivery address.',
          by: 'agent',
          at: 1795386976000,
        },
      },
    ],
  },
);
export type ConversationSchema = Static<typeof ConversationSchema>;

export const ConversationIdParams = Type.Object({
  conversationId: Type.String({ minLength: 1, maxLength: 64, description: 'The conversation ID.' }),
});

const Limit = Type.Optional(
  Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'Page size, 1 to 200.' }),
);
const Cursor = Type.Optional(Type.String({ maxLength: 300, description: 'nextCursor of the previous page.' }));
const NextCursor = Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last page.' }));

export const ConversationListQuery = Type.Object(
  {
    agent: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: "Only this agent's conversations." })),
    endUser: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: "Only this end user's conversations." }),
    ),
    status: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('closed')])),
    handler: Type.Optional(
      Type.Union([Type.Literal('bot'), Type.Literal('human')], {
        description: 'Only those the bot, or people, handle.',
      }),
    ),
    assignee: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'Only those assigned to this person (`usr_...`), or `none` for those assigned to nobody.',
      }),
    ),
    updatedSince: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_INTEGER,
        description: 'Updated at or after this time (ms since epoch).',
      }),
    ),
    limit: Limit,
    cursor: Cursor,
  },
  { additionalProperties: false },
);
export type ConversationListQuery = Static<typeof ConversationListQuery>;

export const ConversationList = Type.Object(
  {
    data: Type.Array(ConversationSchema, { description: 'Newest first (by start).' }),
    nextCursor: NextCursor,
  },
  { title: 'ConversationList' },
);
export type ConversationList = Static<typeof ConversationList>;

export const HandoffBody = Type.Object(
  {
    reason: Type.Optional(
      Type.String({ maxLength: 200, description: 'Why the agent hands over (at most 200 characters).' }),
    ),
    note: Type.Optional(
      Type.String({ maxLength: 2000, description: 'A note for the people who take it (at most 2,000 characters).' }),
    ),
  },
  {
    additionalProperties: false,
    title: 'HandoffRequest',
  },
);
export type HandoffBody = Static<typeof HandoffBody>;

export const SentBy = Type.Object(
  {
    type: Type.Union([Type.Literal('agent'), Type.Literal('user'), Type.Literal('parley')], {
      description:
        'The agent (its API key, a trigger, a campaign), a person of the dashboard, or Parley (a holding text).',
    }),
    id: Type.Optional(Type.String({ description: 'The person (`usr_...`), when a person sent it.' })),
    name: Type.Optional(Type.String({ description: 'Their name as the dashboard shows it, when a person sent it.' })),
  },
  { description: 'Who sent an outbound message.' },
);

export const ThreadQuery = Type.Object({ limit: Limit, cursor: Cursor }, { additionalProperties: false });
export type ThreadQuery = Static<typeof ThreadQuery>;

export const ThreadMessage = Type.Object(
  {
    id: Type.String({
      description: "Parley's ID of an outbound message (`msg_...`); the provider's message ID of an inbound one.",
    }),
    direction: Type.Union([Type.Literal('inbound'), Type.Literal('outbound')]),
    type: Type.Union([Type.Literal('template'), Type.Literal('message')]),
    text: Type.Optional(
      Nullable(Type.String({ description: 'The text (free text either way); of an inbound file, its caption.' })),
    ),
    template: Type.Optional(
      Type.Object({
        name: Type.String(),
        language: Nullable(Type.String()),
        parameters: Type.Optional(Type.Object({ body: Type.Array(Type.String()), header: Type.Array(Type.String()) })),
        headerMedia: Type.Optional(OutboundMediaSchema),
      }),
    ),
    inboundType: Type.Optional(
      Type.String({
        description:
          "An inbound message's kind: `text`, `image`, `audio`, `video`, `document`, `sticker`, `location`, `contacts`, " +
          '`interactive` (a button or list reply), `button` (a template quick reply), `reaction` or `unsupported`.',
      }),
    ),
    ...INBOUND_FIELDS,
    media: Type.Optional(
      Type.Union([InboundMediaSchema, OutboundMediaSchema], {
        description:
          'Inbound: the file the user sent, kept by Parley. Outbound: the file as the send named it (`id` or `link`, `kind`, `filename`).',
      }),
    ),
    buttons: Type.Optional(ReplyButtonsSchema),
    list: Type.Optional(ListSchema),
    messageId: Nullable(Type.String({ description: "The provider's message ID (null until the provider accepted)." })),
    status: Type.Optional(Type.String({ description: 'Delivery status of an outbound message.' })),
    sentBy: Type.Optional(SentBy),
    createdAt: Type.Number({ description: 'When Parley stored it, ms since epoch.' }),
  },
  { title: 'ConversationMessage' },
);
export type ThreadMessage = Static<typeof ThreadMessage>;

export const ThreadPage = Type.Object(
  {
    data: Type.Array(ThreadMessage, { description: 'Oldest first.' }),
    nextCursor: NextCursor,
  },
  { title: 'ConversationMessagePage' },
);
export type ThreadPage = Static<typeof ThreadPage>;
