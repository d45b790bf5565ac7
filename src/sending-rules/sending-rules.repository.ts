import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import type { OrgSendingRulesTable } from './sending-rules.tables.js';

/** SQL of sending rules: the organization's row, and the marketing templates sent to a phone lately. */

type Db = Kysely<DB> | Transaction<DB>;

export async function findSendingRules(db: Db, orgId: string): Promise<OrgSendingRulesTable | undefined> {
  return db.selectFrom('org_sending_rules').selectAll().where('org_id', '=', orgId).executeTakeFirst();
}

export async function upsertSendingRules(db: Db, row: OrgSendingRulesTable): Promise<void> {
  await db
    .insertInto('org_sending_rules')
    .values(row)
    .onConflict((oc) =>
      oc.column('org_id').doUpdateSet({
        quiet_start: row.quiet_start,
        quiet_end: row.quiet_end,
        time_zone: row.time_zone,
        marketing_cap: row.marketing_cap,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

/**
 * Templates the organization sent to `phone` since `since` that the provider took (not refused),
 * by template: the index messages_org_to_created_idx serves it.
 */
export async function templatesSentTo(
  db: Db,
  orgId: string,
  phone: string,
  since: number,
): Promise<{ name: string; language: string | null; count: number }[]> {
  const rows = await db
    .selectFrom('messages')
    .select(['template_name', 'template_language', (eb) => eb.fn.countAll<number>().as('n')])
    .where('org_id', '=', orgId)
    .where('to_phone', '=', phone)
    .where('created_at', '>=', since)
    .where('type', '=', 'template')
    .where('status', 'not in', ['rejected', 'failed', 'pending'])
    .groupBy(['template_name', 'template_language'])
    .execute();
  return rows.map((r) => ({ name: r.template_name ?? '', language: r.template_language, count: Number(r.n) }));
}

/** Marks a delivery held back by quiet hours until `until`. */
export async function markDeliveryHeld(db: Db, deliveryId: string, until: number): Promise<void> {
  await db.updateTable('campaign_deliveries').set({ held_until: until }).where('id', '=', deliveryId).execute();
}
