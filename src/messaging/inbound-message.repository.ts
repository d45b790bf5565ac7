import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/** Inbound messages as a provider webhook stores them. */

export interface NewInboundMessage {
  readonly providerMessageId: string;
  readonly orgId: string;
  readonly numberId: string;
  /** E.164 of the sender. */
  readonly from: string;
  readonly text: string | null;
  readonly type: string;
  readonly sentAt: number;
  readonly receivedAt: number;
  readonly mediaId: string | null;
  readonly replyTo: string | null;
  /** JSON of what the kind carries beside text and file. */
  readonly content: string | null;
}

/** Stores an inbound message; false when it was stored before (a redelivery). */
export async function insertInboundMessage(db: Kysely<DB>, message: NewInboundMessage): Promise<boolean> {
  const inserted = await db
    .insertInto('inbound_messages')
    .values({
      provider_message_id: message.providerMessageId,
      org_id: message.orgId,
      number_id: message.numberId,
      from_phone: message.from,
      text: message.text,
      type: message.type,
      sent_at: message.sentAt,
      received_at: message.receivedAt,
      conversation_id: null,
      media_id: message.mediaId,
      reply_to: message.replyTo,
      content: message.content,
    })
    .onConflict((oc) => oc.column('provider_message_id').doNothing())
    .executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** The conversation a stored inbound message joined (null while it has none, or when none is stored). */
export async function conversationOfInbound(db: Kysely<DB>, providerMessageId: string): Promise<string | null> {
  const row = await db
    .selectFrom('inbound_messages')
    .select('conversation_id')
    .where('provider_message_id', '=', providerMessageId)
    .executeTakeFirst();
  return row?.conversation_id ?? null;
}

/** Whether the inbound message is applied: stored (its window opened in the same transaction) and joined to its conversation. */
export async function inboundMessageStored(db: Kysely<DB>, providerMessageId: string): Promise<boolean> {
  // Stored, and joined to its conversation (or its number has no agent, so it never joins one):
  // the message is stored before its conversation is, and a caller reading the conversation as
  // soon as this says so must find it.
  const row = await db
    .selectFrom('inbound_messages as i')
    .select('i.provider_message_id')
    .where('i.provider_message_id', '=', providerMessageId)
    .where((eb) =>
      eb.or([
        eb('i.conversation_id', 'is not', null),
        eb.not(eb.exists(eb.selectFrom('agents as a').select('a.id').whereRef('a.number_id', '=', 'i.number_id'))),
      ]),
    )
    .executeTakeFirst();
  return row !== undefined;
}

/** What the stored message carries (its kind, text, file, content), for `message.received`. */
export async function inboundKindRow(db: Kysely<DB>, providerMessageId: string) {
  return db
    .selectFrom('inbound_messages')
    .select(['type', 'text', 'media_id', 'reply_to', 'content'])
    .where('provider_message_id', '=', providerMessageId)
    .executeTakeFirst();
}
