import type { Kysely } from 'kysely';
import type { Region } from '../config.js';
import { precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import { PAID_PLAN_REQUIRED } from '../keys/key.service.js';
import { hashKey, parseKey } from '../keys/key-format.js';
import { PERMISSION_LABELS, type Permission, parsePermissions, type Scope } from '../keys/permissions.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import type { LastUsedTracker } from './last-used.js';

/** Who is calling: the key that authenticated the request and what it may do. */
export interface Principal {
  readonly keyId: string;
  readonly orgId: string;
  readonly scope: Scope;
  readonly agentId: string | null;
  readonly campaignId: string | null;
  readonly permissions: readonly Permission[];
}

export interface AuthDeps {
  readonly db: Kysely<DB>;
  readonly region: Region;
  readonly clock: Clock;
  readonly lastUsed: LastUsedTracker;
}

/** The one query of every authenticated request: built once, a prepared statement on SQLite. */
const keyByHash = precompiled((db) =>
  db
    .selectFrom('api_keys')
    .innerJoin('organizations', 'organizations.id', 'api_keys.org_id')
    .select([
      'api_keys.id',
      'api_keys.org_id',
      'api_keys.scope',
      'api_keys.agent_id',
      'api_keys.campaign_id',
      'api_keys.permissions',
      'api_keys.last_used_at',
      'api_keys.revoked_at',
      'organizations.plan',
    ])
    .where('api_keys.hash', '=', slot<string>(0)),
);

const unauthorized = (message: string) => new AppError('UNAUTHORIZED', message);

/**
 * Authenticates a request and checks one permission. Precedence, first failure wins:
 *   401 missing header → 401 not a Bearer token → 401 malformed key or bad checksum →
 *   401 key of another region → 401 unknown key → 401 revoked key →
 *   403 organization on the free plan → 403 permission missing.
 * Everything up to "other region" is decided without touching the database.
 */
export async function authenticate(
  deps: AuthDeps,
  authorization: string | undefined,
  permission: Permission,
): Promise<Principal> {
  if (!authorization) {
    throw unauthorized('Missing Authorization header; send "Authorization: Bearer <API key>".');
  }
  const match = /^Bearer +(\S+) *$/i.exec(authorization);
  if (!match?.[1]) throw unauthorized('The Authorization header must be "Bearer <API key>".');
  const key = match[1];

  const parsed = parseKey(key);
  if (!parsed.ok) throw unauthorized('Invalid API key.');
  if (parsed.region !== deps.region) {
    throw unauthorized(
      `This API key belongs to region "${parsed.region}" and is not valid in region "${deps.region}".`,
    );
  }

  const row = (await keyByHash(deps.db, [hashKey(key)])).rows[0];
  if (!row) throw unauthorized('Invalid API key.');
  if (row.revoked_at !== null) throw unauthorized('This API key has been revoked.');
  if (row.plan !== 'paid') throw new AppError('FORBIDDEN', PAID_PLAN_REQUIRED);

  const permissions = parsePermissions(row.permissions);
  if (!permissions.includes(permission)) {
    throw new AppError('FORBIDDEN', `This API key lacks the ${PERMISSION_LABELS[permission]} permission.`);
  }

  await deps.lastUsed.touch(row.id, row.last_used_at, deps.clock.now());
  return {
    keyId: row.id,
    orgId: row.org_id,
    scope: row.scope,
    agentId: row.agent_id,
    campaignId: row.campaign_id,
    permissions,
  };
}

/** An agent-scoped key may act only on its own agent; organization keys on any of theirs. */
export function assertAgentAllowed(principal: Principal, agentId: string): void {
  if (principal.scope === 'agent' && principal.agentId !== agentId) {
    throw new AppError('FORBIDDEN', 'This API key is bound to another agent.');
  }
}

/** The agent a request targets: the given one, or an agent key's own when none is given. */
export function targetAgentId(principal: Principal, requested: string | undefined): string | undefined {
  if (requested !== undefined) return requested;
  return principal.scope === 'agent' ? (principal.agentId ?? undefined) : undefined;
}

/** Campaign endpoints accept only the key bound to that very campaign. */
export function assertCampaignKey(principal: Principal, campaignId: string): void {
  if (principal.scope !== 'campaign' || principal.campaignId !== campaignId) {
    throw new AppError('FORBIDDEN', 'Only the key bound to this campaign can call its endpoint.');
  }
}
