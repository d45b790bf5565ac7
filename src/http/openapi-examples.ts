/**
 * An example of every named schema of /api/openapi.json that does not carry one of its own, so
 * each request and response body of the reference shows a realistic value (checked against its
 * schema by test/http/openapi.test.ts).
 */

import { EndUserSchema } from '../end-users/end-user.schemas.js';

const EU = 'eu_3kTq9ZpW0bLm2XcV7nR4sA';
const AGENT = 'agt_7hQk2LmN9pRs4TuVw6XyZa';
const CONVERSATION = 'cnv_2bYw8sKq4nLm6RtPz0XcVa';
const WAMID = 'wamid.HBgLMTQxNTU1NTAxMDA';
const T = 1795386969828;

/** The end user of every example: the one `EndUser` carries itself. */
const endUser: unknown = EndUserSchema.examples[0];

const conversation = {
  id: CONVERSATION,
  agentId: AGENT,
  endUserId: EU,
  triggerId: 'order_shipped',
  campaignId: null,
  status: 'open',
  context: { orderId: 'A-1042' },
  startedAt: T,
  lastMessageAt: T + 5292,
  closedAt: null,
  handler: 'bot',
  assignee: null,
  handoff: null,
};

const sandboxSent = {
  messageId: WAMID,
  from: '+16505550100',
  to: '+14155550100',
  type: 'text',
  payload: {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: '+14155550100',
    biz_opaque_callback_data: 'msg_9sDf3GhJ5kLz7XcV1bNm2Q',
    type: 'text',
    text: { preview_url: false, body: 'Your parcel is on its way.' },
  },
  receivedAt: T,
  error: null,
};

const status = { status: 'delivered', timestamp: T + 1200, receivedAt: T + 1231 };

const message = {
  messageId: WAMID,
  id: 'msg_9sDf3GhJ5kLz7XcV1bNm2Q',
  channel: 'msgapp',
  convId: AGENT,
  to: '+14155550100',
  type: 'template',
  templateName: 'order_update',
  status: 'delivered',
  createdAt: T,
  updatedAt: T + 1231,
  statuses: [{ status: 'sent', timestamp: T + 400, receivedAt: T + 420 }, status],
};

const conversationMessage = {
  id: 'msg_9sDf3GhJ5kLz7XcV1bNm2Q',
  direction: 'outbound',
  type: 'template',
  template: { name: 'order_update', language: 'en_US', parameters: { body: ['A-1042'], header: [] } },
  messageId: WAMID,
  status: 'read',
  sentBy: { type: 'agent' },
  createdAt: T,
};

const counts = { queued: 120, sending: 4, sent: 310, delivered: 2210, read: 1490, failed: 12 };

const delivery = {
  id: 'dlv_5fGh7JkL9mNp2QrS4tUv6W',
  to: '+14155550100',
  endUserId: EU,
  conversationId: CONVERSATION,
  status: 'delivered',
  messageId: WAMID,
  error: null,
  createdAt: T,
  sentAt: T + 183,
  updatedAt: T + 2572,
};

export const SCHEMA_EXAMPLES: Readonly<Record<string, unknown>> = {
  ChannelError: { success: false, error: 'The recipient is outside the 24-hour messaging window; send a template.' },
  CodedError: {
    error: 'An end user with this email already exists.',
    code: 'DUPLICATE',
    field: 'email',
    existingId: EU,
  },
  EndUserList: { data: [endUser], nextCursor: 'MTc5NTM4Njk2OTgyODpldV8za1RxOVpwVzBiTG0yWGNWN25SNHNB' },
  EndUserCreateRequest: {
    origin: 'manual',
    name: 'Ada Lovelace',
    email: 'ada@example.com',
    phone: '+14155550100',
    tags: ['vip'],
  },
  EndUserBatchRequest: {
    origin: 'imported',
    endUsers: [
      { name: 'Ada Lovelace', email: 'ada@example.com', tags: ['vip'] },
      { name: 'Charles Babbage', phone: '+442071234567' },
    ],
  },
  EndUserBatchResult: {
    created: 1,
    failed: 1,
    results: [
      { index: 0, status: 'created', endUser },
      { index: 1, status: 'failed', error: 'The phone number is not valid.', code: 'VALIDATION_ERROR', field: 'phone' },
    ],
  },
  EndUserPatch: { name: 'Ada King', tags: ['vip', '2026'], email: null },
  EndUserDeleted: { _id: EU, deleted: true },
  TemplateParameters: { body: ['Ada', 'A-1042'], header: ['Your order'] },
  ChannelSendRequest: {
    channel: 'msgapp',
    to: '+14155550100',
    type: 'template',
    convId: AGENT,
    template: { name: 'order_update', language: 'en_US', parameters: { body: ['A-1042'] } },
  },
  ChannelSendResponse: {
    success: true,
    messageType: 'template',
    channel: 'msgapp',
    messageId: WAMID,
    conversationId: CONVERSATION,
  },
  MessageStatus: status,
  Message: message,
  MessageResponse: { success: true, message },
  TriggerStartRequest: {
    to: '+14155550100',
    parameters: { body: ['Ada', 'A-1042'] },
    endUser: { name: 'Ada Lovelace', email: 'ada@example.com', tags: ['vip'] },
    context: { orderId: 'A-1042' },
  },
  TriggerStartResponse: { success: true, conversationId: CONVERSATION, endUserId: EU, messageId: WAMID, created: true },
  Conversation: conversation,
  ConversationList: { data: [conversation], nextCursor: null },
  ConversationMessage: conversationMessage,
  ConversationMessagePage: {
    data: [
      conversationMessage,
      {
        id: 'msg_1aSd4FgH6jKl8ZxC2vBn3M',
        direction: 'inbound',
        type: 'message',
        text: 'Where is my parcel?',
        messageId: 'wamid.HBgLMTQxNTU1NTAxMDAVAgASGBQ',
        createdAt: T + 60000,
      },
      {
        id: 'wamid.HBgLMTQxNTU1NTAxMDAVAgASGBR',
        direction: 'inbound',
        type: 'message',
        inboundType: 'image',
        text: 'The box arrived like this',
        media: {
          id: 'med_4ZpQ8sKq2nLm6RtPz0XcVa',
          mimeType: 'image/jpeg',
          size: 183422,
          sha256: '3f0a8c2e5d1b7a9f4c6e8d0b2a4c6e8f0a2c4e6a8c0e2a4c6e8a0c2e4a6c8e0a',
          available: true,
        },
        replyTo: 'wamid.HBgLMTQxNTU1NTAxMDAVAgASGBQ',
        messageId: 'wamid.HBgLMTQxNTU1NTAxMDAVAgASGBR',
        createdAt: T + 90000,
      },
    ],
    nextCursor: null,
  },
  CampaignWebhookRequest: {
    recipients: [
      {
        to: '+14155550100',
        parameters: { body: ['Ada'] },
        dedupeKey: 'order-A-1042',
        endUser: { name: 'Ada Lovelace' },
      },
      { to: 'not a phone' },
    ],
  },
  CampaignRecipientResult: { index: 0, status: 'queued', deliveryId: delivery.id },
  CampaignWebhookResponse: {
    success: true,
    accepted: 1,
    duplicates: 0,
    rejected: 1,
    results: [
      { index: 0, status: 'queued', deliveryId: delivery.id },
      { index: 1, status: 'rejected', error: '`to` is not a phone number in international format.' },
    ],
  },
  CampaignCounts: counts,
  Campaign: {
    id: 'cmp_8jKl2MnB4vCx6ZaS9dFg1H',
    name: 'Spring sale',
    agentId: AGENT,
    template: 'spring_sale',
    language: 'en_US',
    status: 'active',
    pausedReason: null,
    createdAt: T,
    updatedAt: T,
    counts,
  },
  Delivery: delivery,
  DeliveryList: { data: [delivery], nextCursor: null },
  Health: { status: 'ok', timestamp: '2026-11-24T12:00:00.000Z', region: 'us' },
  Readiness: { status: 'ready' },
  OpenApiDocument: { openapi: '3.0.3', info: { title: 'Parley API', version: '3.0.0' }, paths: {} },
  HandoffRequest: { reason: 'asked for a human', note: 'Wants to change the delivery address of order A-1042.' },
  SandboxInboundRequest: {
    convId: AGENT,
    from: '+14155550100',
    text: 'The box arrived like this',
    name: 'Ada',
    image: { data: '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8U', mimeType: 'image/jpeg' },
  },
  SandboxInboundResponse: { success: true, messageId: 'wamid.sandbox.HBgLMTQxNTU1NTAxMDA' },
  SandboxSentMessage: sandboxSent,
  SandboxSentList: { data: [sandboxSent] },
  ProviderWebhook: {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '102290129340398',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550783881', phone_number_id: '106540352242922' },
              statuses: [{ id: WAMID, status: 'delivered', timestamp: '1795386971', recipient_id: '14155550100' }],
            },
          },
        ],
      },
    ],
  },
  ProviderWebhookReceived: { received: 1 },
  ProviderWebhookChallenge: '1158201444',
};
