import type { Kysely } from 'kysely';
import { findAgent } from '../agents/agent.service.js';
import { assertAgentAllowed, type Principal, targetAgentId } from '../auth/index.js';
import type { DB } from '../db/schema.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { findAccount, listTemplateRows, templateOfRow } from './template.repository.js';
import type { TemplateList } from './template.schemas.js';

/** The agent a request names (an agent key's own by default) and its number: 400, 403, 404 as a send. */
export async function agentNumberOf(
  db: Kysely<DB>,
  principal: Principal,
  requested: string | undefined,
): Promise<{ agentId: string; numberId: string }> {
  const agentId = targetAgentId(principal, requested);
  if (agentId === undefined) {
    throw new AppError(
      'INVALID_BODY',
      "'agent' is required with an organization key: name the agent whose number to read.",
    );
  }
  assertAgentAllowed(principal, agentId);
  const agent = await findAgent(db, principal.orgId, agentId);
  if (!agent) throw new AppError('NOT_FOUND', `No agent with ID '${clip(agentId, 64)}' in this organization.`);
  if (!agent.numberId) {
    throw new AppError('INVALID_BODY', `Agent '${clip(agentId, 64)}' has no messaging number assigned.`);
  }
  return { agentId, numberId: agent.numberId };
}

/** GET /api/templates: the catalogue of an agent's number. */
export async function listAgentTemplates(
  db: Kysely<DB>,
  principal: Principal,
  agent: string | undefined,
): Promise<TemplateList> {
  const { numberId } = await agentNumberOf(db, principal, agent);
  const [rows, account] = await Promise.all([
    listTemplateRows(db, principal.orgId, numberId),
    findAccount(db, numberId),
  ]);
  return {
    data: rows.map((r) => {
      const { providerTemplateId: _id, ...t } = templateOfRow(r);
      return { ...t, buttons: [...t.buttons] };
    }),
    syncedAt: account?.templates_synced_at == null ? null : Number(account.templates_synced_at),
  };
}
