import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/** What marking a message read needs: the inbound message, its conversation's agent and its number. */
export async function findInboundForRead(db: Kysely<DB>, orgId: string, providerMessageId: string) {
  return db
    .selectFrom('inbound_messages as m')
    .innerJoin('messaging_numbers as n', (join) =>
      join.onRef('n.id', '=', 'm.number_id').onRef('n.org_id', '=', 'm.org_id'),
    )
    .leftJoin('conversations as c', 'c.id', 'm.conversation_id')
    .select(['m.provider_message_id', 'c.agent_id', 'n.phone_number_id', 'n.access_token_enc'])
    .where('m.org_id', '=', orgId)
    .where('m.provider_message_id', '=', providerMessageId)
    .executeTakeFirst();
}

/** Whether the organization sent a message of this ID (the provider's, or Parley's own). */
export async function isOutboundMessage(db: Kysely<DB>, orgId: string, id: string): Promise<boolean> {
  const row = await db
    .selectFrom('messages')
    .select('id')
    .where('org_id', '=', orgId)
    .where((eb) => eb.or([eb('provider_message_id', '=', id), eb('id', '=', id)]))
    .executeTakeFirst();
  return row !== undefined;
}
