import type { Kysely } from 'kysely';
import type { CampaignTable, DB } from '../db/schema.js';

/** Pauses the active campaigns sending from a number, with the reason; resolves with those it paused. */
export async function pauseCampaignsOfNumber(
  db: Kysely<DB>,
  orgId: string,
  numberId: string,
  reason: string,
  at: number,
): Promise<CampaignTable[]> {
  return db
    .updateTable('campaigns')
    .set({ status: 'paused', paused_reason: reason, updated_at: at })
    .where('org_id', '=', orgId)
    .where('status', '=', 'active')
    .where('agent_id', 'in', (eb) =>
      eb.selectFrom('agents').select('id').where('org_id', '=', orgId).where('number_id', '=', numberId),
    )
    .returningAll()
    .execute();
}
