import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { type ProviderAccount, ProviderAccountError } from './provider-account.js';
import { type CatalogueTemplate, templateOfProvider } from './template.model.js';
import {
  ensureAccount,
  type NumberToSync,
  numbersToSync,
  recordSyncError,
  replaceCatalogue,
  setAccountWaba,
} from './template.repository.js';

/** The business account of every sandbox number: the sandbox plays one provider account. */
export const SANDBOX_ACCOUNT = 'sandbox-waba';

/** What reading a number's templates from the provider needs. */
export interface TemplateSyncDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly account: ProviderAccount;
  readonly secrets: { open(sealed: string): string };
}

export interface SyncResult {
  readonly numberId: string;
  readonly synced: boolean;
  readonly templates: number;
  /** Templates written or deleted (0: the stored catalogue was already the provider's). */
  readonly changed: number;
  readonly error?: string;
}

/** The account whose templates a number sends: its own when known, the sandbox's for a sandbox number. */
export const accountOf = (n: Pick<NumberToSync, 'provider' | 'wabaId'>): string | null =>
  n.wabaId ?? (n.provider === 'sandbox' ? SANDBOX_ACCOUNT : null);

/** The access token of a number (a sandbox number has none; the sandbox takes any). */
export function tokenOf(deps: Pick<TemplateSyncDeps, 'secrets'>, n: Pick<NumberToSync, 'accessTokenEnc'>): string {
  return n.accessTokenEnc ? deps.secrets.open(n.accessTokenEnc) : 'sandbox';
}

/**
 * Reads one number's templates from the provider and stores them as its catalogue. A provider that
 * cannot be read leaves the catalogue as it was (never synced: sends fall back to the provider's
 * answer), with the reason kept.
 */
export async function syncNumberTemplates(deps: TemplateSyncDeps, n: NumberToSync): Promise<SyncResult> {
  const waba = accountOf(n);
  await ensureAccount(deps.db, { number_id: n.id, org_id: n.orgId, waba_id: waba });
  if (!waba) {
    const error = 'the business account of this number is not known, so its templates cannot be read';
    await recordSyncError(deps.db, n.id, error);
    return { numberId: n.id, synced: false, templates: 0, changed: 0, error };
  }
  let items: unknown[];
  try {
    items = await deps.account.listTemplates(waba, tokenOf(deps, n));
  } catch (err) {
    const error = err instanceof ProviderAccountError ? err.message : 'the templates could not be read';
    if (!(err instanceof ProviderAccountError)) deps.logger.warn({ err, numberId: n.id }, 'template sync failed');
    await recordSyncError(deps.db, n.id, error);
    return { numberId: n.id, synced: false, templates: 0, changed: 0, error };
  }
  const at = deps.clock.now();
  const templates = items.map((i) => templateOfProvider(i, at)).filter((t): t is CatalogueTemplate => !!t);
  const changed = await deps.db.transaction().execute((trx) => replaceCatalogue(trx, n.orgId, n.id, templates, at));
  return { numberId: n.id, synced: true, templates: templates.length, changed };
}

/** Syncs the numbers of an organization (or one of them, or every number of the region). */
export async function syncTemplates(
  deps: TemplateSyncDeps,
  filter: { orgId?: string; numberId?: string } = {},
): Promise<SyncResult[]> {
  const results: SyncResult[] = [];
  for (const n of await numbersToSync(deps.db, filter)) results.push(await syncNumberTemplates(deps, n));
  return results;
}

/** Records the provider business account a cloud number's templates live in (`parley number add --waba-id`). */
export async function setNumberAccount(
  db: Kysely<DB>,
  input: { numberId: string; orgId: string; wabaId: string },
): Promise<void> {
  if (!/^\d{1,32}$/.test(input.wabaId)) {
    throw new AppError(
      'INVALID_BODY',
      `--waba-id must be the numeric business account ID, got "${input.wabaId.slice(0, 40)}"`,
    );
  }
  await setAccountWaba(db, { number_id: input.numberId, org_id: input.orgId, waba_id: input.wabaId });
}
