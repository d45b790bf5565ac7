import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { type CatalogueTemplate, templateKey } from './template.model.js';
import { findAccount, listTemplateRows, templateOfRow } from './template.repository.js';

/** A number's catalogue as a send sees it: whether it was ever synced, and its templates. */
export interface Catalogue {
  readonly synced: boolean;
  readonly templates: ReadonlyMap<string, CatalogueTemplate>;
  /** The languages each name exists in (to say "no en_GB translation; it has en_US"). */
  readonly languages: ReadonlyMap<string, readonly string[]>;
}

/** The catalogue as stored now (no cache: for the rarer checks, creating a trigger or a campaign). */
export async function readCatalogue(db: Kysely<DB>, orgId: string, numberId: string): Promise<Catalogue> {
  const account = await findAccount(db, numberId);
  const rows = account?.catalogue_synced ? await listTemplateRows(db, orgId, numberId) : [];
  const templates = new Map<string, CatalogueTemplate>();
  const languages = new Map<string, string[]>();
  for (const row of rows) {
    const t = templateOfRow(row);
    templates.set(templateKey(t.name, t.language), t);
    languages.set(t.name, [...(languages.get(t.name) ?? []), t.language]);
  }
  return { synced: account?.catalogue_synced === 1, templates, languages };
}
