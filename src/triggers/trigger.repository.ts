import type { Kysely } from 'kysely';
import type { TriggerTable } from '../conversations/conversation.tables.js';
import type { DB } from '../db/schema.js';

/** Throws a unique violation when the agent already has a trigger with that ID. */
export async function insertTrigger(db: Kysely<DB>, row: TriggerTable): Promise<void> {
  await db.insertInto('triggers').values(row).execute();
}

/** The triggers of an organization (or of one of its agents), oldest first. */
export async function listTriggerRows(db: Kysely<DB>, orgId: string, agentId?: string): Promise<TriggerTable[]> {
  let query = db.selectFrom('triggers').selectAll().where('org_id', '=', orgId);
  if (agentId !== undefined) query = query.where('agent_id', '=', agentId);
  return query.orderBy('created_at').orderBy('agent_id').orderBy('id').execute();
}

export async function findTriggerRow(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
  triggerId: string,
): Promise<TriggerTable | undefined> {
  return db
    .selectFrom('triggers')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('agent_id', '=', agentId)
    .where('id', '=', triggerId)
    .executeTakeFirst();
}

/** Resolves with the number of triggers changed (0 or 1). */
export async function setTriggerEnabledRow(
  db: Kysely<DB>,
  input: { orgId: string; agentId: string; id: string; enabled: boolean },
): Promise<number> {
  const result = await db
    .updateTable('triggers')
    .set({ enabled: input.enabled ? 1 : 0 })
    .where('org_id', '=', input.orgId)
    .where('agent_id', '=', input.agentId)
    .where('id', '=', input.id)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
