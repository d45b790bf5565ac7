import type { Kysely } from 'kysely';
import { keyCacheOf } from '../auth/index.js';
import type { Database } from '../db/database.js';
import type { DB } from '../db/schema.js';
import { type Catalogue, readCatalogue } from './catalogue-read.js';
import { templateKey } from './template.model.js';

export type { Catalogue };

export interface CatalogueDeps {
  readonly database: Database;
  readonly db: Kysely<DB>;
}

/**
 * A number's catalogue, kept in memory beside the keys: every change to its templates or to its
 * being synced bumps the key epoch (migration 0050), which drops it on every node (as the agent's
 * sending number is, src/channels/sender.ts). A send thus reads it from the database once per change.
 */
export async function catalogueOf(
  deps: CatalogueDeps,
  orgId: string,
  numberId: string,
  /** An epoch a statement of this request just read: a newer one than the cache's drops what it kept. */
  seenEpoch?: number,
): Promise<{ catalogue: Catalogue; epoch: number | undefined }> {
  const cache = keyCacheOf(deps.database);
  if (seenEpoch !== undefined) cache.confirm(seenEpoch, seenEpoch);
  const cached = await cache.beside<Catalogue>(`templates\u0000${numberId}`, () =>
    readCatalogue(deps.db, orgId, numberId),
  );
  return { catalogue: cached ?? (await readCatalogue(deps.db, orgId, numberId)), epoch: cache.current };
}

/**
 * The category of a template of a number, from its catalogue: undefined when the catalogue was
 * never synced or has no such template. For other features' rules (a marketing frequency cap).
 */
export async function templateCategory(
  deps: CatalogueDeps,
  input: { orgId: string; numberId: string; name: string; language: string },
): Promise<string | undefined> {
  const { catalogue } = await catalogueOf(deps, input.orgId, input.numberId);
  return catalogue.templates.get(templateKey(input.name, input.language))?.category;
}
