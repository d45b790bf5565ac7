import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { AppError } from '../shared/errors.js';
import { ProviderAccountError } from './provider-account.js';
import { healthRows, type NumberToSync, recordHealth } from './template.repository.js';
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
    await deps.onQualityChange?.({ orgId: n.orgId, numberId: n.id, before, quality: health.quality });
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
