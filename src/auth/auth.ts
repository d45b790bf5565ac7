import type { Kysely } from 'kysely';
import type { Region } from '../config.js';
import type { DB } from '../db/schema.js';
import { hashKey, PERMISSION_LABELS, type Permission, parseKey, parsePermissions, type Scope } from '../keys/index.js';
import { PAID_PLAN_REQUIRED } from '../keys/key.service.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { keyByHash } from './auth.fast.js';
import type { KeyCache } from './key-cache.js';
import { revokedKeyError } from './key-epoch.js';
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
  /** Keys in memory, trusted only while the key epoch has not moved (src/auth/key-cache.ts). */
  readonly keys?: KeyCache<KeyRecord>;
}

/** What authentication needs of a key's row, parsed once (and cached with it). */
export interface KeyRecord {
  readonly revoked: boolean;
  readonly plan: string;
  readonly lastUsedAt: number | null;
  readonly principal: Principal;
}

const unauthorized = (message: string) => new AppError('UNAUTHORIZED', message);

async function readKey(db: Kysely<DB>, hash: string): Promise<KeyRecord | undefined> {
  const row = (await keyByHash(db, [hash])).rows[0];
  if (!row) return undefined;
  return {
    revoked: row.revoked_at !== null,
    plan: row.plan,
    lastUsedAt: row.last_used_at,
    principal: Object.freeze({
      keyId: row.id,
      orgId: row.org_id,
      scope: row.scope,
      agentId: row.agent_id,
      campaignId: row.campaign_id,
      permissions: Object.freeze(parsePermissions(row.permissions)),
    }),
  };
}

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
  /** The permission the route needs, or a list of which any one will do. */
  permission: Permission | readonly Permission[],
): Promise<Principal> {
  const hash = keyHashOf(deps.region, authorization);
  const record = deps.keys ? await deps.keys.get(hash, () => readKey(deps.db, hash)) : await readKey(deps.db, hash);
  const principal = admit(record, permission);
  await deps.lastUsed.touch(principal.keyId, record?.lastUsedAt ?? null, deps.clock.now());
  return principal;
}

/**
 * The stored hash of the key a request presents, after every check that needs no database: the
 * header, the key's shape and checksum, its region.
 */
export function keyHashOf(region: Region, authorization: string | undefined): string {
  if (!authorization) {
    throw unauthorized('Missing Authorization header; send "Authorization: Bearer <API key>".');
  }
  const match = /^Bearer +(\S+) *$/i.exec(authorization);
  if (!match?.[1]) throw unauthorized('The Authorization header must be "Bearer <API key>".');
  const key = match[1];

  const parsed = parseKey(key);
  if (!parsed.ok) throw unauthorized('Invalid API key.');
  if (parsed.region !== region) {
    throw unauthorized(`This API key belongs to region "${parsed.region}" and is not valid in region "${region}".`);
  }
  return hashKey(key);
}

/** The principal of a key's record, or the 401 or 403 it earns (the database checks, in order). */
export function admit(record: KeyRecord | undefined, permission: Permission | readonly Permission[]): Principal {
  if (!record) throw unauthorized('Invalid API key.');
  if (record.revoked) throw revokedKeyError();
  if (record.plan !== 'paid') throw new AppError('FORBIDDEN', PAID_PLAN_REQUIRED);

  const { principal } = record;
  if (typeof permission === 'string' ? !principal.permissions.includes(permission) : !hasAny(principal, permission)) {
    const wanted: readonly Permission[] = typeof permission === 'string' ? [permission] : permission;
    const names = wanted.map((p) => PERMISSION_LABELS[p]).join(' or ');
    throw new AppError('FORBIDDEN', `This API key lacks the ${names} permission.`);
  }
  return principal;
}

const hasAny = (principal: Principal, wanted: readonly Permission[]) =>
  wanted.some((p) => principal.permissions.includes(p));

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
