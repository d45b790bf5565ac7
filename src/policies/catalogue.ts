import type { Kysely } from 'kysely';
import { keyCacheOf } from '../auth/index.js';
import type { Database } from '../db/database.js';
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

export interface CatalogueDeps {
  readonly database: Database;
  readonly db: Kysely<DB>;
}

/**
 * A number's catalogue, kept in memory beside the keys: every change to its templates or to its
 * being synced bumps the key epoch (migration 0050), which drops it on every node (as the agent's
 * sending number is, src/channels/sender.ts). A send thus reads it from the database once per change.
 */
export async function catalogueOf(deps: CatalogueDeps, orgId: string, numberId: string): Promise<Catalogue> {
  const cached = await keyCacheOf(deps.database).beside<Catalogue>(`templates\u0000${numberId}`, () =>
    readCatalogue(deps.db, orgId, numberId),
  );
  return cached ?? readCatalogue(deps.db, orgId, numberId);
}

async function readCatalogue(db: Kysely<DB>, orgId: string, numberId: string): Promise<Catalogue> {
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

/**
 * The category of a template of a number, from its catalogue: undefined when the catalogue was
 * never synced or has no such template. For other features' rules (a marketing frequency cap).
 */
export async function templateCategory(
  deps: CatalogueDeps,
  input: { orgId: string; numberId: string; name: string; language: string },
): Promise<string | undefined> {
  const catalogue = await catalogueOf(deps, input.orgId, input.numberId);
  return catalogue.templates.get(templateKey(input.name, input.language))?.category;
}
