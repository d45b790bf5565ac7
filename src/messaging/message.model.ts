import type { MessageStatusTable, MessageTable } from './messaging.tables.js';

/** Messaging's domain facts: the customer-service window, the statuses and their order, a message's columns. */

export const WINDOW_MS = 24 * 60 * 60 * 1000;

/** Delivery statuses in the only order they may move; failed is final, so it ranks highest. */
export const STATUS_RANK = {
  pending: 0,
  unconfirmed: 0,
  accepted: 1,
  sent: 2,
  delivered: 3,
  read: 4,
  failed: 5,
  rejected: 5,
} as const;
export type MessageStatus = keyof typeof STATUS_RANK;
export const PROVIDER_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const;
export type ProviderStatus = (typeof PROVIDER_STATUSES)[number];

export interface StatusEvent {
  readonly status: ProviderStatus;
  readonly occurredAt: number;
  readonly receivedAt: number;
  readonly errorCode: number | null;
  readonly errorMessage: string | null;
}

export const MESSAGE_COLUMNS = [
  'id',
  'org_id',
  'agent_id',
  'number_id',
  'to_phone',
  'type',
  'template_name',
  'provider_message_id',
  'status',
  'status_rank',
  'error_code',
  'error_message',
  'created_at',
  'updated_at',
  'conversation_id',
  'text',
  'template_language',
  'template_parameters',
] as const satisfies readonly (keyof MessageTable)[];

/** Each column's type on PostgreSQL (its migrations), for placeholders that must say it. */
export const MESSAGE_COLUMN_TYPES: Record<(typeof MESSAGE_COLUMNS)[number], 'text' | 'integer' | 'bigint'> = {
  id: 'text',
  org_id: 'text',
  agent_id: 'text',
  number_id: 'text',
  to_phone: 'text',
  type: 'text',
  template_name: 'text',
  provider_message_id: 'text',
  status: 'text',
  status_rank: 'integer',
  error_code: 'integer',
  error_message: 'text',
  created_at: 'bigint',
  updated_at: 'bigint',
  conversation_id: 'text',
  text: 'text',
  template_language: 'text',
  template_parameters: 'text',
};

/** How long a status for a message Parley does not know is kept: the provider's retry horizon. */
export const PENDING_STATUS_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/** The columns of a message that `GET /api/messages/<id>` shows (and the agent, for agent keys). */
export const MESSAGE_READ_COLUMNS = [
  'id',
  'agent_id',
  'to_phone',
  'type',
  'template_name',
  'provider_message_id',
  'status',
  'error_code',
  'error_message',
  'created_at',
  'updated_at',
] as const satisfies readonly (typeof MESSAGE_COLUMNS)[number][];

/** A message as read for its answer: only the columns it shows. */
export type MessageRead = Pick<MessageTable, (typeof MESSAGE_READ_COLUMNS)[number]>;

export type StatusRow = Omit<MessageStatusTable, 'message_id'>;
