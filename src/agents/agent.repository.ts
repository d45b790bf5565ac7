import type { Kysely } from 'kysely';
import type { AgentTable, DB } from '../db/schema.js';

export async function insertAgent(db: Kysely<DB>, row: AgentTable): Promise<void> {
  await db.insertInto('agents').values(row).execute();
}

export async function findAgentRow(db: Kysely<DB>, orgId: string, agentId: string): Promise<AgentTable | undefined> {
  return db.selectFrom('agents').selectAll().where('org_id', '=', orgId).where('id', '=', agentId).executeTakeFirst();
}

/** The agents of an organization, oldest first. */
export async function listAgentRows(db: Kysely<DB>, orgId: string): Promise<AgentTable[]> {
  return db.selectFrom('agents').selectAll().where('org_id', '=', orgId).orderBy('created_at').execute();
}

export async function updateHoldingText(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
  text: string | null,
): Promise<AgentTable | undefined> {
  return db
    .updateTable('agents')
    .set({ holding_text: text })
    .where('org_id', '=', orgId)
    .where('id', '=', agentId)
    .returningAll()
    .executeTakeFirst();
}
