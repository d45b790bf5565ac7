import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { NumberAccountTable, NumberTemplateTable } from './policies.tables.js';
import type { CatalogueTemplate, TemplateButton } from './template.model.js';

export const templateOfRow = (row: NumberTemplateTable): CatalogueTemplate => ({
  name: row.name,
  language: row.language,
  category: row.category,
  status: row.status,
  header: row.header_format ? { format: row.header_format, parameters: row.header_parameters } : null,
  bodyParameters: row.body_parameters,
  buttons: parseButtons(row.buttons),
  providerTemplateId: row.provider_template_id,
  updatedAt: Number(row.updated_at),
});

function parseButtons(text: string): TemplateButton[] {
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? (parsed as TemplateButton[]) : [];
  } catch {
    return [];
  }
}

const rowOf = (orgId: string, numberId: string, t: CatalogueTemplate): NumberTemplateTable => ({
  number_id: numberId,
  org_id: orgId,
  name: t.name,
  language: t.language,
  category: t.category,
  status: t.status,
  header_format: t.header?.format ?? null,
  header_parameters: t.header?.parameters ?? 0,
  body_parameters: t.bodyParameters,
  buttons: JSON.stringify(t.buttons),
  provider_template_id: t.providerTemplateId,
  updated_at: t.updatedAt,
});

/** A number's templates, by name then language. */
export async function listTemplateRows(
  db: Kysely<DB>,
  orgId: string,
  numberId: string,
): Promise<NumberTemplateTable[]> {
  return db
    .selectFrom('number_templates')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('number_id', '=', numberId)
    .orderBy('name')
    .orderBy('language')
    .execute();
}

export async function findAccount(db: Kysely<DB>, numberId: string): Promise<NumberAccountTable | undefined> {
  return db.selectFrom('number_accounts').selectAll().where('number_id', '=', numberId).executeTakeFirst();
}

/** The account row of a number, made when missing (its business account, when known). */
export async function ensureAccount(
  db: Kysely<DB>,
  row: Pick<NumberAccountTable, 'number_id' | 'org_id' | 'waba_id'>,
): Promise<void> {
  await db
    .insertInto('number_accounts')
    .values({ ...row, catalogue_synced: 0 })
    .onConflict((oc) => oc.column('number_id').doNothing())
    .execute();
}

const same = (a: NumberTemplateTable, b: NumberTemplateTable) =>
  a.category === b.category &&
  a.status === b.status &&
  a.header_format === b.header_format &&
  a.header_parameters === b.header_parameters &&
  a.body_parameters === b.body_parameters &&
  a.buttons === b.buttons &&
  a.provider_template_id === b.provider_template_id;

/**
 * Makes the stored catalogue of a number the provider's: templates changed or new are written,
 * those gone deleted, the rest left alone (so a sync that finds nothing new moves no key epoch).
 * Resolves with how many rows changed.
 */
export async function replaceCatalogue(
  trx: Kysely<DB>,
  orgId: string,
  numberId: string,
  templates: readonly CatalogueTemplate[],
  at: number,
): Promise<number> {
  const existing = new Map<string, NumberTemplateTable>(
    (await listTemplateRows(trx, orgId, numberId)).map((r) => [`${r.name}\u0000${r.language}`, r]),
  );
  let changed = 0;
  const seen = new Set<string>();
  for (const t of templates) {
    const key = `${t.name}\u0000${t.language}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const row = rowOf(orgId, numberId, t);
    const old = existing.get(key);
    if (old && same(old, row)) continue;
    changed++;
    if (old) {
      const { number_id: _n, name: _na, language: _l, org_id: _o, ...set } = row;
      await trx
        .updateTable('number_templates')
        .set(set)
        .where('number_id', '=', numberId)
        .where('name', '=', t.name)
        .where('language', '=', t.language)
        .execute();
    } else {
      await trx.insertInto('number_templates').values(row).execute();
    }
  }
  const gone = [...existing.entries()].filter(([key]) => !seen.has(key)).map(([, r]) => r);
  for (const r of gone) {
    changed++;
    await trx
      .deleteFrom('number_templates')
      .where('number_id', '=', numberId)
      .where('name', '=', r.name)
      .where('language', '=', r.language)
      .execute();
  }
  await trx
    .updateTable('number_accounts')
    .set({ templates_synced_at: at, sync_error: null })
    .where('number_id', '=', numberId)
    .execute();
  // Only the first sync moves the key epoch (the catalogue becomes authoritative).
  await trx
    .updateTable('number_accounts')
    .set({ catalogue_synced: 1 })
    .where('number_id', '=', numberId)
    .where('catalogue_synced', '=', 0)
    .execute();
  return changed;
}

export async function recordSyncError(db: Kysely<DB>, numberId: string, error: string): Promise<void> {
  await db.updateTable('number_accounts').set({ sync_error: error }).where('number_id', '=', numberId).execute();
}

/** The numbers whose templates live in a business account (a template status webhook names the account). */
export async function numbersOfAccount(
  db: Kysely<DB>,
  wabaId: string,
): Promise<Pick<NumberAccountTable, 'number_id' | 'org_id'>[]> {
  return db.selectFrom('number_accounts').select(['number_id', 'org_id']).where('waba_id', '=', wabaId).execute();
}

/** A template's new status (and category, when the provider says) on every number of an account. */
export async function setTemplateStatus(
  db: Kysely<DB>,
  numberIds: readonly string[],
  change: { name: string; language: string; status: string; category: string | undefined; at: number },
): Promise<number> {
  if (numberIds.length === 0) return 0;
  const result = await db
    .updateTable('number_templates')
    .set({
      status: change.status,
      ...(change.category ? { category: change.category } : {}),
      updated_at: change.at,
    })
    .where('number_id', 'in', numberIds)
    .where('name', '=', change.name)
    .where('language', '=', change.language)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Every number with its account row (the scheduled sync's list). */
export async function listAccounts(db: Kysely<DB>): Promise<NumberAccountTable[]> {
  return db.selectFrom('number_accounts').selectAll().orderBy('number_id').execute();
}

/** What syncing a number needs to know of it. */
export interface NumberToSync {
  readonly id: string;
  readonly orgId: string;
  /** E.164. */
  readonly phone: string;
  readonly provider: string;
  readonly phoneNumberId: string;
  readonly accessTokenEnc: string | null;
  readonly wabaId: string | null;
}

/** The numbers to sync: one, an organization's, or all of them. */
export async function numbersToSync(
  db: Kysely<DB>,
  filter: { orgId?: string; numberId?: string } = {},
): Promise<NumberToSync[]> {
  let q = db
    .selectFrom('messaging_numbers as n')
    .leftJoin('number_accounts as a', 'a.number_id', 'n.id')
    .select(['n.id', 'n.org_id', 'n.phone', 'n.provider', 'n.phone_number_id', 'n.access_token_enc', 'a.waba_id']);
  if (filter.orgId) q = q.where('n.org_id', '=', filter.orgId);
  if (filter.numberId) q = q.where('n.id', '=', filter.numberId);
  const rows = await q.orderBy('n.created_at').execute();
  return rows.map((r) => ({
    id: r.id,
    orgId: r.org_id,
    phone: r.phone,
    provider: r.provider,
    phoneNumberId: r.phone_number_id,
    accessTokenEnc: r.access_token_enc,
    wabaId: r.waba_id,
  }));
}

/** Stores a number's quality rating and messaging limit (its account row made when missing). */
export async function recordHealth(
  db: Kysely<DB>,
  n: Pick<NumberToSync, 'id' | 'orgId' | 'wabaId'>,
  health: { quality: string; messagingLimit: string | null },
  at: number,
): Promise<void> {
  await ensureAccount(db, { number_id: n.id, org_id: n.orgId, waba_id: n.wabaId });
  await db
    .updateTable('number_accounts')
    .set({ quality: health.quality, messaging_limit: health.messagingLimit, health_updated_at: at })
    .where('number_id', '=', n.id)
    .execute();
}

/** The number with this provider phone number ID, or else this display phone (E.164). */
export async function numberForHealth(
  db: Kysely<DB>,
  by: { phoneNumberId?: string | undefined; phone?: string | undefined },
): Promise<(NumberToSync & { quality: string | null }) | undefined> {
  if (!by.phoneNumberId && !by.phone) return undefined;
  let q = db
    .selectFrom('messaging_numbers as n')
    .leftJoin('number_accounts as a', 'a.number_id', 'n.id')
    .select([
      'n.id',
      'n.org_id',
      'n.phone',
      'n.provider',
      'n.phone_number_id',
      'n.access_token_enc',
      'a.waba_id',
      'a.quality',
    ]);
  q = by.phoneNumberId ? q.where('n.phone_number_id', '=', by.phoneNumberId) : q.where('n.phone', '=', by.phone ?? '');
  const r = await q.executeTakeFirst();
  if (!r) return undefined;
  return {
    id: r.id,
    orgId: r.org_id,
    phone: r.phone,
    provider: r.provider,
    phoneNumberId: r.phone_number_id,
    accessTokenEnc: r.access_token_enc,
    wabaId: r.waba_id,
    quality: r.quality,
  };
}

/** The stored health of some numbers. */
export async function healthRows(
  db: Kysely<DB>,
  numberIds: readonly string[],
): Promise<Pick<NumberAccountTable, 'number_id' | 'quality' | 'messaging_limit' | 'health_updated_at'>[]> {
  if (numberIds.length === 0) return [];
  return db
    .selectFrom('number_accounts')
    .select(['number_id', 'quality', 'messaging_limit', 'health_updated_at'])
    .where('number_id', 'in', numberIds)
    .execute();
}

/** Sets the business account of a number (its account row made when missing). */
export async function setAccountWaba(
  db: Kysely<DB>,
  row: Pick<NumberAccountTable, 'number_id' | 'org_id' | 'waba_id'>,
): Promise<void> {
  await ensureAccount(db, row);
  await db
    .updateTable('number_accounts')
    .set({ waba_id: row.waba_id })
    .where('number_id', '=', row.number_id)
    .execute();
}

/** The numbers with a stored rating, with their phone (the metrics). */
export async function ratedNumbers(
  db: Kysely<DB>,
): Promise<{ phone: string; quality: string | null; messaging_limit: string | null }[]> {
  return db
    .selectFrom('number_accounts as a')
    .innerJoin('messaging_numbers as n', 'n.id', 'a.number_id')
    .select(['n.phone', 'a.quality', 'a.messaging_limit'])
    .where('a.quality', 'is not', null)
    .orderBy('n.phone')
    .limit(1000)
    .execute();
}
