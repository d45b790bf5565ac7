import type { Kysely } from 'kysely';
import { findAgent } from '../agents/agent.service.js';
import { TEMPLATE_LANGUAGE } from '../channels/channel.schemas.js';
import type { TriggerTable } from '../conversations/conversation.tables.js';
import { isUniqueViolation } from '../db/db-errors.js';
import type { DB } from '../db/schema.js';
import { getOrganization } from '../orgs/org.service.js';
import { checkTemplateOfNumber } from '../policies/template-check.service.js';
import { clip } from '../shared/clip.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { randomBase62 } from '../shared/ids.js';
import { findTriggerRow, insertTrigger, listTriggerRows, setTriggerEnabledRow } from './trigger.repository.js';

/** An entry point of one agent: its opening template, and whether it can be started. */
export interface Trigger {
  id: string;
  agentId: string;
  name: string;
  template: string;
  language: string;
  enabled: boolean;
}

export const TRIGGER_ID = /^[a-z0-9_-]{1,64}$/;

export const toTrigger = (row: TriggerTable): Trigger => ({
  id: row.id,
  agentId: row.agent_id,
  name: row.name,
  template: row.template_name,
  language: row.template_language,
  enabled: Number(row.enabled) === 1,
});

const invalid = (message: string) => new AppError('INVALID_BODY', message);

export async function createTrigger(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; agentId: string; name: string; template: string; language: string; id?: string },
): Promise<Trigger> {
  await getOrganization(db, input.orgId);
  const agent = await findAgent(db, input.orgId, input.agentId);
  if (!agent) throw new AppError('NOT_FOUND', `No agent with ID '${clip(input.agentId, 64)}' in this organization.`);
  const name = input.name.trim();
  if (!name) throw invalid('the trigger name must not be empty');
  if (name.length > 200) throw invalid('the trigger name must be at most 200 characters');
  const template = input.template.trim();
  if (!template) throw invalid('the template name must not be empty');
  if (template.length > 512) throw invalid('the template name must be at most 512 characters');
  if (!TEMPLATE_LANGUAGE.test(input.language)) {
    throw invalid(`the language must be a code of the form xx_XX, such as en_US; got '${clip(input.language)}'`);
  }
  if (input.id !== undefined && !TRIGGER_ID.test(input.id)) {
    throw invalid(
      `the trigger ID must be 1 to 64 characters of a-z, 0-9, '_' and '-' (such as order_shipped); got '${clip(input.id, 70)}'`,
    );
  }
  // As a send would be refused: an unknown or unapproved template of the agent's number.
  await checkTemplateOfNumber(db, {
    orgId: input.orgId,
    numberId: agent.numberId,
    name: template,
    language: input.language,
  });
  const row: TriggerTable = {
    agent_id: agent.id,
    id: input.id ?? `trg_${randomBase62(12).toLowerCase()}`,
    org_id: input.orgId,
    name,
    template_name: template,
    template_language: input.language,
    enabled: 1,
    created_at: clock.now(),
  };
  try {
    await insertTrigger(db, row);
  } catch (err) {
    if (isUniqueViolation(err)) throw invalid(`agent ${agent.id} already has a trigger with ID '${row.id}'`);
    throw err;
  }
  return toTrigger(row);
}

/** The triggers of an organization (or of one of its agents), oldest first. */
export async function listTriggers(db: Kysely<DB>, orgId: string, agentId?: string): Promise<Trigger[]> {
  await getOrganization(db, orgId);
  if (agentId !== undefined && !(await findAgent(db, orgId, agentId))) {
    throw new AppError('NOT_FOUND', `No agent with ID '${clip(agentId, 64)}' in this organization.`);
  }
  const rows = await listTriggerRows(db, orgId, agentId);
  return rows.map(toTrigger);
}

/** A trigger of the agent (in the organization), or undefined. */
export async function findTrigger(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
  triggerId: string,
): Promise<Trigger | undefined> {
  const row = await findTriggerRow(db, orgId, agentId, triggerId);
  return row ? toTrigger(row) : undefined;
}

export async function setTriggerEnabled(
  db: Kysely<DB>,
  input: { orgId: string; agentId: string; id: string; enabled: boolean },
): Promise<Trigger> {
  const updated = await setTriggerEnabledRow(db, input);
  if (updated === 0) {
    throw new AppError('NOT_FOUND', `Agent '${clip(input.agentId, 64)}' has no trigger '${clip(input.id, 64)}'.`);
  }
  const trigger = await findTrigger(db, input.orgId, input.agentId, input.id);
  if (!trigger)
    throw new AppError('NOT_FOUND', `Agent '${clip(input.agentId, 64)}' has no trigger '${clip(input.id, 64)}'.`);
  return trigger;
}
