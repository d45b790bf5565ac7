import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { OrgConsentRulesTable } from './policies.tables.js';

export async function findConsentRules(db: Kysely<DB>, orgId: string): Promise<OrgConsentRulesTable | undefined> {
  return db.selectFrom('org_consent_rules').selectAll().where('org_id', '=', orgId).executeTakeFirst();
}

export async function upsertConsentRules(db: Kysely<DB>, row: OrgConsentRulesTable): Promise<void> {
  await db
    .insertInto('org_consent_rules')
    .values(row)
    .onConflict((oc) =>
      oc.column('org_id').doUpdateSet({
        opt_out_keywords: row.opt_out_keywords,
        opt_in_keywords: row.opt_in_keywords,
        opt_out_reply: row.opt_out_reply,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

/** The first agent (oldest) sending from a number: who an opt-out's event and reply belong to. */
export async function agentOfNumber(db: Kysely<DB>, orgId: string, numberId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('agents')
    .select('id')
    .where('org_id', '=', orgId)
    .where('number_id', '=', numberId)
    .orderBy('created_at')
    .executeTakeFirst();
  return row?.id;
}
