import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { orgTemplateCategory } from '../policies/index.js';

export type TemplateCategory = 'MARKETING' | 'UTILITY' | 'AUTHENTICATION';

/**
 * A template's category, for the marketing frequency cap: what the organization's template
 * catalogue says, and MARKETING when no synced catalogue knows the template (the stricter reading:
 * a cap that cannot tell counts it).
 */
export async function templateCategory(
  db: Kysely<DB>,
  orgId: string,
  template: { name: string; language: string | null },
): Promise<TemplateCategory> {
  if (template.language === null) return 'MARKETING';
  const category = await orgTemplateCategory(db, orgId, template.name, template.language);
  return category === 'UTILITY' || category === 'AUTHENTICATION' ? category : 'MARKETING';
}
