import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/** The reads and writes of an inbound message's file download. */

/** The number's provider ID and sealed token (null for the sandbox), by its ID. */
export async function numberCredentials(db: Kysely<DB>, numberId: string) {
  return db
    .selectFrom('messaging_numbers')
    .select(['phone_number_id', 'access_token_enc'])
    .where('id', '=', numberId)
    .executeTakeFirst();
}

/**
 * The inbound message holding a file, its row locked for the rest of the transaction (an update
 * that changes nothing: the same on both databases). Joining the message to its conversation
 * updates the same row, so of the two transactions the later one sees the other's work.
 */
export async function lockInboundOfMedia(db: Kysely<DB>, providerMessageId: string) {
  return db
    .updateTable('inbound_messages')
    .set((eb) => ({ media_id: eb.ref('media_id') }))
    .where('provider_message_id', '=', providerMessageId)
    .returningAll()
    .executeTakeFirst();
}

/** The agent and end user of a conversation. */
export async function conversationParties(db: Kysely<DB>, conversationId: string) {
  return db
    .selectFrom('conversations')
    .select(['id', 'org_id', 'agent_id', 'end_user_id', 'status', 'handler'])
    .where('id', '=', conversationId)
    .executeTakeFirst();
}
