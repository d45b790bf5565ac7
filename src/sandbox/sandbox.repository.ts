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
