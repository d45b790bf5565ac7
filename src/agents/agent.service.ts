import type { Kysely } from 'kysely';
import type { AgentTable, DB } from '../db/schema.js';
import { getOrganization } from '../orgs/org.service.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { findAgentRow, insertAgent, listAgentRows, updateHoldingText } from './agent.repository.js';

export interface Agent {
  /** The public agent ID, used as `convId`. */
  id: string;
  orgId: string;
  name: string;
  numberId: string | null;
  createdAt: number;
  /** Free text Parley sends when it hands a conversation to people (no hook, or its hook down); null: none. */
  holdingText: string | null;
}

export const toAgent = (row: AgentTable): Agent => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  numberId: row.number_id,
  createdAt: row.created_at,
  holdingText: row.holding_text ?? null,
});

/** The longest holding text: well inside the provider's 4,096 characters of a text message. */
export const MAX_HOLDING_TEXT = 1000;

/**
 * Sets (or, with an empty text, removes) the agent's holding text. The provider refuses a text of
 * only spaces, and counts characters, not UTF-16 units.
 */
export async function setHoldingText(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
  text: string | null,
): Promise<Agent> {
  const value = text?.trim() ? text.trim() : null;
  if (value !== null && [...value].length > MAX_HOLDING_TEXT) {
    throw new AppError(
      'INVALID_BODY',
      `A holding text is at most ${MAX_HOLDING_TEXT} characters; this one has ${[...value].length}.`,
    );
  }
  const row = await updateHoldingText(db, orgId, agentId, value);
  if (!row)
    throw new AppError('NOT_FOUND', `No agent '${agentId.slice(0, 64)}' in organization ${orgId.slice(0, 64)}.`);
  return toAgent(row);
}

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
