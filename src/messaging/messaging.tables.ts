import type { ColumnType } from 'kysely';

/** Tables of the messaging feature (migrations 0003-messaging, 0006-webhook-dead-letters, 0016-one-dead-letter-store). */
export interface MessagingNumberTable {
  id: string;
  org_id: string;
  /** E.164, e.g. +14155550100. */
  phone: string;
  provider: 'sandbox' | 'cloud';
  /** The provider's numeric ID of the number. */
  phone_number_id: string;
  /** AES-256-GCM sealed access token (`v1.<iv>.<tag>.<ciphertext>`, base64url), or null for the sandbox. */
  access_token_enc: string | null;
  created_at: number;
}

export interface MessageTable {
  id: string;
  org_id: string;
  agent_id: string;
  number_id: string;
  to_phone: string;
  type: 'template' | 'message';
  template_name: string | null;
  /** The provider's `wamid.` ID, set once the provider accepted the send. */
  provider_message_id: string | null;
  /** pending → accepted → sent → delivered → read, or failed; rejected / unconfirmed when the send failed. */
  status: string;
  /** Order of `status`, so that statuses only move forward (failed is highest: final). */
  status_rank: number;
  error_code: number | null;
  error_message: string | null;
  created_at: number;
  updated_at: number;
  /** The conversation the message belongs to (null for messages sent before conversations existed). */
  conversation_id: string | null;
  /** The text of a free-text send. */
  text: string | null;
  template_language: string | null;
  /** JSON `{"body": [...], "header": [...]}` of a template send. */
  template_parameters: string | null;
}

/** What the database adds to a message row: its columns with a default, left out of a row written. */
export interface MessageTableDefaults {
  /**
   * The rows of `message_statuses` of this message, as a JSON array in no particular order (jsonb on
   * PostgreSQL, text on SQLite; migration 0015-status-history): what a read of the message shows.
   * Read as node-postgres parses jsonb (an array) or as SQLite's text; written only by the database
   * (its default and the triggers of `message_statuses`), never in a row or an update.
   */
  status_history: ColumnType<string | readonly unknown[], never, never>;
}

export interface MessageStatusTable {
  message_id: string;
  status: string;
  /** Provider timestamp (ms). */
  occurred_at: number;
  received_at: number;
  error_code: number | null;
  error_message: string | null;
}

/** Statuses that arrived before their message was stored, applied when it is. */
export interface PendingStatusTable {
  provider_message_id: string;
  /** The number the status was reported for (`metadata.phone_number_id`), when the webhook said. */
  phone_number_id: string | null;
  status: string;
  occurred_at: number;
  received_at: number;
  error_code: number | null;
  error_message: string | null;
}

export interface InboundMessageTable {
  provider_message_id: string;
  org_id: string;
  number_id: string;
  from_phone: string;
  text: string | null;
  sent_at: number;
  received_at: number;
  conversation_id: string | null;
  /** The provider's message type (`text`, `image`, `button`...). */
  type: string | null;
  /** The file the message carries (`media.id`), for images, audio, video, documents and stickers. */
  media_id?: string | null;
  /** The provider's ID of the message this one replies to (`context.id`). */
  reply_to?: string | null;
  /** JSON of what the kind carries beside text and media (`InboundContent`: location, reply, reaction, contacts). */
  content?: string | null;
}

/** The 24-hour window: last time a user wrote to a number. */
export interface MessagingWindowTable {
  number_id: string;
  /** `windowKey()` of the user's phone (E.164, Brazil's and Mexico's two spellings folded into one). */
  user_phone: string;
  last_inbound_at: number;
}

/**
 * A provider webhook body holding an inbound message for a phone number ID no number has, kept
 * until the number is added (`parley number add` replays it) or an operator replays it. A body
 * whose work kept failing is a dead letter of the job runner (`job_dead_letters`, queue
 * `provider-webhook`), not a row here.
 */
export interface UnroutedWebhookTable {
  id: string;
  /** The raw body, as signed. */
  body: string;
  received_at: number;
  /** Attempts made so far. */
  attempts: number;
  last_error: string;
  /** When it was last kept (its last attempt). */
  kept_at: number;
  /** `,id1,id2,`: the unknown phone number IDs (none listed when the webhook named none). */
  phone_number_ids: string;
}

/**
 * What an outbound message carried beside its text (migration 0040-rich-outbound), only for the
 * sends that carried something: JSON `OutboundContent` (media, buttons, list, replyTo, headerMedia).
 */
export interface MessageContentTable {
  message_id: string;
  org_id: string;
  content: string;
}
