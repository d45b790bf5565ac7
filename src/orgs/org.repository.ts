import type { Kysely } from 'kysely';
import type { DB, OrganizationTable } from '../db/schema.js';

export async function insertOrganization(db: Kysely<DB>, row: OrganizationTable): Promise<void> {
  await db.insertInto('organizations').values(row).execute();
}

export async function findOrganizationRow(db: Kysely<DB>, orgId: string): Promise<OrganizationTable | undefined> {
  return db.selectFrom('organizations').selectAll().where('id', '=', orgId).executeTakeFirst();
}

export async function findOrganizationPlan(
  db: Kysely<DB>,
  orgId: string,
): Promise<Pick<OrganizationTable, 'plan'> | undefined> {
  return db.selectFrom('organizations').select('plan').where('id', '=', orgId).executeTakeFirst();
}

export async function setPlan(db: Kysely<DB>, orgId: string, plan: OrganizationTable['plan']): Promise<void> {
  await db.updateTable('organizations').set({ plan }).where('id', '=', orgId).execute();
}

/** Sets the default country; resolves with the number of organizations changed (0 or 1). */
export async function setDefaultCountry(db: Kysely<DB>, orgId: string, country: string | null): Promise<number> {
  const result = await db
    .updateTable('organizations')
    .set({ default_country: country })
    .where('id', '=', orgId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Every organization, oldest first. */
export async function listOrganizationRows(db: Kysely<DB>): Promise<OrganizationTable[]> {
  return db.selectFrom('organizations').selectAll().orderBy('created_at').orderBy('id').execute();
}
