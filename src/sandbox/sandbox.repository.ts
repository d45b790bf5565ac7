import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/** An agent and its messaging number; with `orgId`, only an agent of that organization. */
export async function findAgentNumberRow(db: Kysely<DB>, agentId: string, orgId?: string) {
  let query = db
    .selectFrom('agents')
    .leftJoin('messaging_numbers', (join) =>
      join
        .onRef('messaging_numbers.id', '=', 'agents.number_id')
        .onRef('messaging_numbers.org_id', '=', 'agents.org_id'),
    )
    .select(['agents.id', 'agents.org_id', 'messaging_numbers.phone', 'messaging_numbers.phone_number_id'])
    .where('agents.id', '=', agentId);
  if (orgId !== undefined) query = query.where('agents.org_id', '=', orgId);
  return query.executeTakeFirst();
}

/** Where an inbound message went: its conversation (null until joined to one) and when it arrived. */
export async function findInboundRow(db: Kysely<DB>, providerMessageId: string) {
  return db
    .selectFrom('inbound_messages')
    .select(['org_id', 'conversation_id', 'received_at'])
    .where('provider_message_id', '=', providerMessageId)
    .executeTakeFirst();
}

/** The first message sent in a conversation at or after `since` (ms): the agent's answer to what came in then. */
export async function findFirstOutboundSince(db: Kysely<DB>, orgId: string, conversationId: string, since: number) {
  return db
    .selectFrom('messages')
    .select(['id', 'provider_message_id', 'type', 'text', 'template_name', 'status', 'error_message', 'created_at'])
    .where('org_id', '=', orgId)
    .where('conversation_id', '=', conversationId)
    .where('created_at', '>=', since)
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}
