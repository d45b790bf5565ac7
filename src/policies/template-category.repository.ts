import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/**
 * The category the organization's catalogues give a template (any of its numbers: a category is the
 * business account's, the same on each number that sends it); undefined when no synced catalogue has it.
 */
export async function orgTemplateCategory(
  db: Kysely<DB>,
  orgId: string,
  name: string,
  language: string,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('number_templates')
    .select('category')
    .where('org_id', '=', orgId)
    .where('name', '=', name)
    .where('language', '=', language)
    .limit(1)
    .executeTakeFirst();
  return row?.category;
}
