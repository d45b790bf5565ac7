import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import type { SegmentSendStatus, SegmentSendTable } from './campaign.tables.js';

/** SQL of segment sends: the row, its compare-and-set state changes and its progress. */

type Db = Kysely<DB> | Transaction<DB>;

export async function insertSegmentSend(db: Db, row: SegmentSendTable): Promise<void> {
  await db.insertInto('segment_sends').values(row).execute();
}

export async function findSegmentSend(
  db: Db,
  orgId: string,
  campaignId: string,
  id: string,
): Promise<SegmentSendTable | undefined> {
  return db
    .selectFrom('segment_sends')
    .selectAll()
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .where('campaign_id', '=', campaignId)
    .executeTakeFirst();
}

export async function findSegmentSendById(db: Db, id: string): Promise<SegmentSendTable | undefined> {
  return db.selectFrom('segment_sends').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The newest sends of a campaign. */
export async function listSegmentSendRows(db: Db, campaignId: string, limit: number): Promise<SegmentSendTable[]> {
  return db
    .selectFrom('segment_sends')
    .selectAll()
    .where('campaign_id', '=', campaignId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** Moves a send from one state to another; false when it was not in `from` (another run, or a cancel, came first). */
export async function moveSegmentSend(
  db: Db,
  id: string,
  from: SegmentSendStatus,
  to: SegmentSendStatus,
  at: number,
  extra: Partial<Pick<SegmentSendTable, 'started_at' | 'finished_at' | 'error'>> = {},
): Promise<boolean> {
  const result = await db
    .updateTable('segment_sends')
    .set({ status: to, updated_at: at, ...extra })
    .where('id', '=', id)
    .where('status', '=', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Records one slice of members turned into deliveries, in the transaction that stored them, only
 * if the send is still running from `after`: a second run of the same slice (a job taken over)
 * changes nothing, and its transaction is rolled back.
 */
export async function advanceSegmentSend(
  db: Db,
  id: string,
  after: string,
  next: string,
  counts: { members: number; accepted: number; duplicates: number; optedOut: number; skipped: number },
  at: number,
): Promise<boolean> {
  const result = await db
    .updateTable('segment_sends')
    .set((eb) => ({
      after_end_user_id: next,
      members: eb('members', '+', counts.members),
      accepted: eb('accepted', '+', counts.accepted),
      duplicates: eb('duplicates', '+', counts.duplicates),
      opted_out: eb('opted_out', '+', counts.optedOut),
      skipped: eb('skipped', '+', counts.skipped),
      updated_at: at,
    }))
    .where('id', '=', id)
    .where('status', '=', 'running')
    .where('after_end_user_id', '=', after)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
