import { type Static, Type } from '@sinclair/typebox';
import { TemplateParameters } from '../channels/channel.schemas.js';
import { MAX_PHONE_INPUT } from '../shared/phone.js';
import { DELIVERY_STATUSES } from './campaign.repository.js';

export const MAX_RECIPIENTS = 1000;
export const MAX_DEDUPE_KEY = 200;

export const CampaignParams = Type.Object({
  campaignId: Type.String({ maxLength: 64, description: 'The campaign ID (`cmp_...`).' }),
});

/** One recipient; checked one by one, so a bad recipient is rejected alone. */
export const CampaignRecipient = Type.Object(
  {
    to: Type.String({
      maxLength: MAX_PHONE_INPUT,
      description: 'The recipient: a phone number in international format; normalized to E.164.',
      examples: ['+14155550100'],
    }),
    parameters: Type.Optional(TemplateParameters),
    dedupeKey: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_DEDUPE_KEY,
        description: 'A recipient with a key seen in this campaign in the last 30 days is a duplicate, not sent again.',
      }),
    ),
    endUser: Type.Optional(
      Type.Object(
        {
          name: Type.Optional(Type.String({ maxLength: 200 })),
          email: Type.Optional(Type.String({ maxLength: 254 })),
          tags: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 50 })),
        },
        {
          additionalProperties: false,
          description: 'Fields of the end user made for a new phone (never applied to an existing one).',
        },
      ),
    ),
  },
  { title: 'CampaignRecipient', additionalProperties: false },
);
export type CampaignRecipient = Static<typeof CampaignRecipient>;

export const CampaignWebhookBody = Type.Object(
  {
    recipients: Type.Array(
      Type.Unknown({
        description:
          'A recipient: `{"to": "+E164", "parameters"?: {"body": [...], "header": [...]}, "dedupeKey"?: "...", ' +
          '"endUser"?: {"name"?, "email"?, "tags"?}}`. Each is checked alone: a bad one is rejected with a sentence, ' +
          'the others go on.',
      }),
      { minItems: 1, maxItems: MAX_RECIPIENTS, description: `1 to ${MAX_RECIPIENTS} recipients.` },
    ),
  },
  {
    title: 'CampaignWebhookRequest',
    examples: [
      {
        recipients: [
          { to: '+14155550100', parameters: { body: ['Ada'] }, dedupeKey: 'order-1042' },
          { to: '+14155550101' },
        ],
      },
    ],
    additionalProperties: false,
  },
);
export type CampaignWebhookBody = Static<typeof CampaignWebhookBody>;

export const RecipientResult = Type.Object(
  {
    index: Type.Integer({ description: 'Position of the recipient in the request.' }),
    status: Type.Union([Type.Literal('queued'), Type.Literal('duplicate'), Type.Literal('rejected')]),
    deliveryId: Type.Optional(
      Type.String({ description: 'The delivery made (queued), or the first delivery of its dedupe key (duplicate).' }),
    ),
    error: Type.Optional(Type.String({ description: 'Why the recipient was rejected.' })),
  },
  { title: 'CampaignRecipientResult' },
);
export type RecipientResult = Static<typeof RecipientResult>;

export const CampaignWebhookResponse = Type.Object(
  {
    success: Type.Literal(true),
    accepted: Type.Integer(),
    duplicates: Type.Integer(),
    rejected: Type.Integer(),
    results: Type.Array(RecipientResult),
  },
  { title: 'CampaignWebhookResponse' },
);
export type CampaignWebhookResponse = Static<typeof CampaignWebhookResponse>;

const DeliveryStatus = Type.Unsafe<(typeof DELIVERY_STATUSES)[number]>({
  type: 'string',
  enum: [...DELIVERY_STATUSES],
  description:
    '`queued` (waiting for its turn), `sending` (handed to the provider, no status back yet), `sent`, `delivered`, ' +
    "`read` (the provider's statuses, never moving backwards), `failed` (with `error`).",
});

export const CampaignCounts = Type.Object(
  Object.fromEntries(DELIVERY_STATUSES.map((s) => [s, Type.Integer()])) as Record<
    (typeof DELIVERY_STATUSES)[number],
    ReturnType<typeof Type.Integer>
  >,
  { title: 'CampaignCounts', description: 'Deliveries by status.' },
);

export const CampaignResponse = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    agentId: Type.Union([Type.String(), Type.Null()]),
    template: Type.Union([Type.String(), Type.Null()]),
    language: Type.Union([Type.String(), Type.Null()]),
    status: Type.Union([Type.Literal('active'), Type.Literal('paused')]),
    pausedReason: Type.Union([Type.String(), Type.Null()], {
      description:
        "Why Parley paused it (its number's quality rating turned RED); null when active or paused by a person.",
    }),
    createdAt: Type.Integer({ description: 'ms since epoch' }),
    updatedAt: Type.Integer({ description: 'ms since epoch' }),
    counts: CampaignCounts,
  },
  { title: 'Campaign' },
);

export const DeliveriesQuery = Type.Object({
  status: Type.Optional(DeliveryStatus),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'The `nextCursor` of the previous page.' })),
});
export type DeliveriesQuery = Static<typeof DeliveriesQuery>;

export const Delivery = Type.Object(
  {
    id: Type.String(),
    to: Type.String(),
    endUserId: Type.Union([Type.String(), Type.Null()]),
    conversationId: Type.Union([Type.String(), Type.Null()]),
    status: DeliveryStatus,
    messageId: Type.Union([Type.String(), Type.Null()], { description: "The provider's message ID, once known." }),
    error: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.Integer(),
    sentAt: Type.Union([Type.Integer(), Type.Null()], { description: 'When the provider accepted it.' }),
    updatedAt: Type.Integer(),
  },
  {
    title: 'Delivery',
    examples: [
      {
        id: 'dlv_5fGh7JkL9mNp2QrS4tUv6W',
        to: '+14155550100',
        endUserId: 'eu_3kTq9ZpW0bLm2XcV7nR4sA',
        conversationId: 'cnv_2bYw8sKq4nLm6RtPz0XcVa',
        status: 'delivered',
        messageId: 'wamid.HBgLMTQxNTU1NTAxMDA',
        error: null,
        createdAt: 1795386969828,
        sentAt: 1795386970011,
        updatedAt: 1795386972400,
      },
    ],
  },
);
export type Delivery = Static<typeof Delivery>;

export const DeliveriesResponse = Type.Object(
  {
    data: Type.Array(Delivery),
    nextCursor: Type.Union([Type.String(), Type.Null()]),
  },
  { title: 'DeliveryList' },
);
export type DeliveriesResponse = Static<typeof DeliveriesResponse>;

export const RecipientCheckResult = Type.Object(
  {
    index: Type.Integer({ description: 'Position of the recipient in the request.' }),
    status: Type.Union([Type.Literal('queued'), Type.Literal('duplicate'), Type.Literal('rejected')], {
      description: 'What the webhook would answer for it.',
    }),
    deliveryId: Type.Optional(
      Type.String({ description: 'duplicate: the delivery its dedupe key already points at.' }),
    ),
    error: Type.Optional(Type.String({ description: 'Why the webhook would reject it.' })),
    delivery: Type.Optional(
      Type.Union([Type.Literal('sent'), Type.Literal('failed')], {
        description: 'queued: whether its delivery would go to the provider, or fail before it.',
      }),
    ),
    reason: Type.Optional(
      Type.String({ description: 'Why the delivery would fail: `opted_out`, or the template catalogue’s sentence.' }),
    ),
  },
  { title: 'CampaignRecipientCheck' },
);
export type RecipientCheckResult = Static<typeof RecipientCheckResult>;

export const RecipientCheckResponse = Type.Object(
  {
    success: Type.Literal(true),
    accepted: Type.Integer(),
    duplicates: Type.Integer(),
    rejected: Type.Integer(),
    results: Type.Array(RecipientCheckResult),
  },
  {
    title: 'CampaignWebhookCheckResponse',
    examples: [
      {
        success: true,
        accepted: 2,
        duplicates: 0,
        rejected: 0,
        results: [
          { index: 0, status: 'queued', delivery: 'sent' },
          { index: 1, status: 'queued', delivery: 'failed', reason: 'opted_out' },
        ],
      },
    ],
  },
);
export type RecipientCheckResponse = Static<typeof RecipientCheckResponse>;
