import type { Kysely } from 'kysely';
import type { AgentTable, DB } from '../db/schema.js';
import { getOrganization } from '../orgs/org.service.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { findAgentRow, insertAgent, listAgentRows } from './agent.repository.js';

export interface Agent {
  /** The public agent ID, used as `convId`. */
  id: string;
  orgId: string;
  name: string;
  numberId: string | null;
  createdAt: number;
}

export const toAgent = (row: AgentTable): Agent => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  numberId: row.number_id,
  createdAt: row.created_at,
});

export async function createAgent(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; name: string; numberId?: string | null },
): Promise<Agent> {
  await getOrganization(db, input.orgId);
  const name = input.name.trim();
  if (!name) throw new AppError('INVALID_BODY', 'agent name must not be empty');
  const row: AgentTable = {
    id: newId('agt'),
    org_id: input.orgId,
    name,
    number_id: input.numberId ?? null,
    created_at: clock.now(),
  };
  await insertAgent(db, row);
  return toAgent(row);
}

/** Finds an agent inside one organization; another organization's agent is simply not found. */
export async function findAgent(db: Kysely<DB>, orgId: string, agentId: string): Promise<Agent | undefined> {
  const row = await findAgentRow(db, orgId, agentId);
  return row ? toAgent(row) : undefined;
}

/** The agents of an organization, oldest first; an unknown organization is an error, not an empty list. */
export async function listAgents(db: Kysely<DB>, orgId: string): Promise<Agent[]> {
  await getOrganization(db, orgId);
  const rows = await listAgentRows(db, orgId);
  return rows.map(toAgent);
}
