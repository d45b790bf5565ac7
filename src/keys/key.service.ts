import type { Kysely } from 'kysely';
import { findAgent } from '../agents/agent.service.js';
import { inTransaction, recordAudit } from '../audit/audit.service.js';
import { findCampaign } from '../campaigns/campaign.service.js';
import type { Region } from '../config.js';
import type { ApiKeyTable, DB } from '../db/schema.js';
import { getOrganization } from '../orgs/org.service.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { findKeyRow, findKeyRows, insertKey, listKeyRows, setKeyRevoked } from './key.repository.js';
import { generateKey } from './key-format.js';
import {
  isPermission,
  isScope,
  type Permission,
  parsePermissions,
  type Scope,
  scopePermissionProblem,
  serializePermissions,
} from './permissions.js';

/** The words for permissions and scopes, for the dashboard's pages. */
export { PERMISSION_LABELS, SCOPE_LABELS } from './permissions.js';

export const PAID_PLAN_REQUIRED = 'API access requires a paid plan';

/** A key as listed: never the key itself, only its visible prefix. */
export interface ApiKey {
  id: string;
  orgId: string;
  label: string;
  prefix: string;
  scope: Scope;
  agentId: string | null;
  campaignId: string | null;
  permissions: Permission[];
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

export const toApiKey = (row: ApiKeyTable): ApiKey => ({
  id: row.id,
  orgId: row.org_id,
  label: row.label,
  prefix: row.prefix,
  scope: row.scope,
  agentId: row.agent_id,
  campaignId: row.campaign_id,
  permissions: parsePermissions(row.permissions),
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

export interface CreateKeyInput {
  orgId: string;
  label: string;
  scope: string;
  agentId?: string;
  campaignId?: string;
  /** Permission names; for a campaign key, defaults to Campaigns. */
  permissions?: readonly string[];
  /** Who creates it, for the audit log (`cli`, or a dashboard user's email); unset: not recorded. */
  actor?: string;
}

export async function createKey(
  db: Kysely<DB>,
  clock: Clock,
  region: Region,
  input: CreateKeyInput,
): Promise<{ apiKey: ApiKey; key: string }> {
  const org = await getOrganization(db, input.orgId);
  if (org.plan !== 'paid') throw new AppError('FORBIDDEN', PAID_PLAN_REQUIRED);

  const label = input.label.trim();
  if (!label) throw new AppError('INVALID_BODY', 'a key needs a label');
  if (label.length > 100) throw new AppError('INVALID_BODY', 'a key label is at most 100 characters');
  if (!isScope(input.scope)) {
    throw new AppError('INVALID_BODY', `scope must be organization, agent or campaign, got "${input.scope}"`);
  }
  const scope = input.scope;

  const requested = input.permissions ?? (scope === 'campaign' ? ['campaigns'] : []);
  const unknown = requested.filter((p) => !isPermission(p));
  if (unknown.length > 0) {
    throw new AppError(
      'INVALID_BODY',
      `unknown permission "${unknown[0]}"; expected triggers, channels, endusers or campaigns`,
    );
  }
  const permissions = [...new Set(requested as Permission[])];
  const problem = scopePermissionProblem(scope, permissions);
  if (problem) throw new AppError('INVALID_BODY', problem);

  let agentId: string | null = null;
  let campaignId: string | null = null;
  if (scope === 'agent') {
    if (!input.agentId) throw new AppError('INVALID_BODY', 'an agent-scoped key needs an agent (--agent)');
    const agent = await findAgent(db, org.id, input.agentId);
    if (!agent) throw new AppError('NOT_FOUND', `unknown agent "${input.agentId}" in organization ${org.id}`);
    agentId = agent.id;
  } else if (input.agentId) {
    throw new AppError('INVALID_BODY', 'only an agent-scoped key is bound to an agent');
  }
  if (scope === 'campaign') {
    if (!input.campaignId) throw new AppError('INVALID_BODY', 'a campaign key needs a campaign (--campaign)');
    const campaign = await findCampaign(db, org.id, input.campaignId);
    if (!campaign) {
      throw new AppError('NOT_FOUND', `unknown campaign "${input.campaignId}" in organization ${org.id}`);
    }
    campaignId = campaign.id;
  } else if (input.campaignId) {
    throw new AppError('INVALID_BODY', 'only a campaign key is bound to a campaign');
  }

  const generated = generateKey(region);
  const row: ApiKeyTable = {
    id: newId('key'),
    org_id: org.id,
    label,
    prefix: generated.prefix,
    hash: generated.hash,
    scope,
    agent_id: agentId,
    campaign_id: campaignId,
    permissions: serializePermissions(permissions),
    created_at: clock.now(),
    last_used_at: null,
    revoked_at: null,
  };
  const actor = input.actor;
  await inTransaction(db, async (trx) => {
    await insertKey(trx, row);
    if (actor) {
      await recordAudit(trx, {
        orgId: org.id,
        actor,
        action: 'key.created',
        targetType: 'api_key',
        targetId: row.id,
        details: { label, prefix: row.prefix, scope, permissions, agentId, campaignId },
        at: row.created_at,
      });
    }
  });
  return { apiKey: toApiKey(row), key: generated.key };
}

/** The keys of the organization among `keyIds` (others, and unknown IDs, are left out). */
export async function findKeys(db: Kysely<DB>, orgId: string, keyIds: readonly string[]): Promise<ApiKey[]> {
  return (await findKeyRows(db, orgId, [...new Set(keyIds)])).map(toApiKey);
}

export async function listKeys(db: Kysely<DB>, orgId: string): Promise<ApiKey[]> {
  await getOrganization(db, orgId);
  const rows = await listKeyRows(db, orgId);
  return rows.map(toApiKey);
}

/**
 * Revokes a key for good. Revoking a revoked key keeps its first revocation time. With an `actor`,
 * the revocation (not a repeat) is recorded in the audit log in the same transaction.
 */
export async function revokeKey(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  keyId: string,
  actor?: string,
): Promise<ApiKey> {
  await getOrganization(db, orgId);
  const now = clock.now();
  await inTransaction(db, async (trx) => {
    const revoked = await setKeyRevoked(trx, orgId, keyId, now);
    if (actor && revoked > 0) {
      await recordAudit(trx, { orgId, actor, action: 'key.revoked', targetType: 'api_key', targetId: keyId, at: now });
    }
  });
  const row = await findKeyRow(db, orgId, keyId);
  if (!row) throw new AppError('NOT_FOUND', `unknown key "${keyId}" in organization ${orgId}`);
  return toApiKey(row);
}
