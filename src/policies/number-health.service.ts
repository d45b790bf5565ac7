import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { AppError } from '../shared/errors.js';
import { ProviderAccountError } from './provider-account.js';
import { healthRows, type NumberToSync, ratedNumbers, recordHealth } from './template.repository.js';
import { type TemplateSyncDeps, tokenOf } from './template-sync.service.js';

/** A number's health as the provider rates it. */
export interface NumberHealth {
  readonly quality: string;
  readonly messagingLimit: string | null;
}

/** What a change of a number's rating leads to (campaigns paused on RED, slowed on YELLOW: wired in context.ts). */
export type OnQualityChange = (change: {
  readonly orgId: string;
  readonly numberId: string;
  /** E.164. */
  readonly phone: string;
  readonly before: string | null;
  readonly quality: string;
}) => Promise<void>;

/**
 * Reads a number's quality rating and messaging limit from the provider and stores them; when the
 * rating changed, `onChange` hears of it. Throws PROVIDER_UNAVAILABLE when the provider cannot be read.
 */
export async function refreshNumberHealth(
  deps: TemplateSyncDeps & { readonly onQualityChange?: OnQualityChange | undefined },
  n: NumberToSync,
  before: string | null,
): Promise<NumberHealth> {
  let health: NumberHealth;
  try {
    health = await deps.account.numberHealth(n.phoneNumberId, tokenOf(deps, n));
  } catch (err) {
    if (err instanceof ProviderAccountError) throw new AppError('PROVIDER_UNAVAILABLE', err.message);
    throw err;
  }
  await recordHealth(deps.db, n, health, deps.clock.now());
  if (before !== health.quality) {
    await deps.onQualityChange?.({ orgId: n.orgId, numberId: n.id, phone: n.phone, before, quality: health.quality });
  }
  return health;
}

/** A number's stored health, for the CLI, the dashboard and the metrics. */
export async function storedHealth(
  db: Kysely<DB>,
  numberIds: readonly string[],
): Promise<Map<string, NumberHealth & { updatedAt: number | null }>> {
  const out = new Map<string, NumberHealth & { updatedAt: number | null }>();
  const rows = await healthRows(db, numberIds);
  for (const r of rows) {
    if (r.quality === null) continue;
    out.set(r.number_id, {
      quality: r.quality,
      messagingLimit: r.messaging_limit,
      updatedAt: r.health_updated_at === null ? null : Number(r.health_updated_at),
    });
  }
  return out;
}

/** How long a node trusts a number's rating it read for pacing (a change reaches every node this fast). */
const HALF_PACE_TTL_MS = 5_000;

/**
 * Whether a number's campaign sends go at half pace (its rating is YELLOW), read at most every few
 * seconds per number: a campaign delivery asks before each send.
 */
export function halfPaceLookup(db: Kysely<DB>): (numberId: string) => Promise<boolean> {
  const known = new Map<string, { yellow: boolean; at: number }>();
  return async (numberId) => {
    const now = Date.now();
    const hit = known.get(numberId);
    if (hit && now - hit.at < HALF_PACE_TTL_MS) return hit.yellow;
    const yellow = (await storedHealth(db, [numberId])).get(numberId)?.quality === 'YELLOW';
    if (known.size > 10_000) known.clear();
    known.set(numberId, { yellow, at: now });
    return yellow;
  };
}

/** Every number of the region with a rating, for the metrics. */
export async function allNumberHealth(
  db: Kysely<DB>,
): Promise<{ phone: string; quality: string; messagingLimit: string | null }[]> {
  return (await ratedNumbers(db)).map((r) => ({
    phone: r.phone,
    quality: r.quality ?? 'UNKNOWN',
    messagingLimit: r.messaging_limit,
  }));
}
