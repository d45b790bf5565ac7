import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

export type TemplateCategory = 'MARKETING' | 'UTILITY' | 'AUTHENTICATION';

/**
 * A template's category, for the marketing frequency cap. There is no template catalogue on this
 * branch yet, so every template counts as MARKETING (the cap is then the stricter reading); this
 * is the one place to ask the catalogue once it exists.
 */
export async function templateCategory(
  _db: Kysely<DB>,
  _orgId: string,
  _template: { name: string; language: string | null },
): Promise<TemplateCategory> {
  return 'MARKETING';
}
