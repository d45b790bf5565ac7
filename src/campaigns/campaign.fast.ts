/**
 * The hot statements of campaigns. What this file promises: each statement is built once and
 * prepared once (`precompiled`: a named prepared statement on PostgreSQL, a prepared
 * better-sqlite3 statement on SQLite) and run directly; a write here would join that event-loop
 * turn's group commit on SQLite. The rest of campaigns' SQL is in campaign.repository.ts.
 */
import type { Kysely } from 'kysely';
import { precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';

/** The read behind `deliveryForSend`, prepared once and run directly. */
const deliveryForSendQuery = precompiled((db) =>
  db
    .selectFrom('campaign_deliveries as d')
    .innerJoin('campaigns as c', 'c.id', 'd.campaign_id')
    .leftJoin('agents as a', (join) => join.onRef('a.id', '=', 'c.agent_id').onRef('a.org_id', '=', 'c.org_id'))
    .leftJoin('messages as m', 'm.id', 'd.message_id')
    .select([
      'd.id',
      'd.org_id',
      'd.campaign_id',
      'd.to_phone',
      'd.parameters',
      'd.end_user',
      'd.state',
      'd.message_id',
      'd.claimed_at',
      'd.throttles',
      'c.agent_id',
      'c.template_name',
      'c.template_language',
      'c.default_parameters',
      'c.status as campaign_status',
      'm.id as stored_message_id',
      'm.status as message_status',
      'm.error_code as message_error_code',
      'm.error_message as message_error',
      'm.created_at as message_created_at',
      'a.number_id',
    ])
    .where('d.id', '=', slot<string>(0)),
);

/** A delivery with what its send needs: the campaign's agent, template, defaults and status. */
export async function deliveryForSend(db: Kysely<DB>, id: string) {
  return (await deliveryForSendQuery(db, [id])).rows[0];
}
