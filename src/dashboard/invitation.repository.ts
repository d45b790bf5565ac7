import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { InvitationTable } from './dashboard.tables.js';

/** SQL of invitations to the dashboard (stored by the SHA-256 of their link's token); nothing else. */

export async function insertInvitation(db: Kysely<DB>, row: InvitationTable): Promise<void> {
  await db.insertInto('invitations').values(row).execute();
}

/** The organization's invitations not used yet and not expired at `now`, newest first. */
export async function listOpenInvitationRows(db: Kysely<DB>, orgId: string, now: number): Promise<InvitationTable[]> {
  return db
    .selectFrom('invitations')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('accepted_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

export async function findInvitationByHash(db: Kysely<DB>, tokenHash: string): Promise<InvitationTable | undefined> {
  return db.selectFrom('invitations').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Marks the invitation used, unless it was used already or has expired: true when this call did. */
export async function claimInvitation(db: Kysely<DB>, id: string, now: number): Promise<boolean> {
  const row = await db
    .updateTable('invitations')
    .set({ accepted_at: now })
    .where('id', '=', id)
    .where('accepted_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Withdraws an invitation not used yet: resolves with its email, or undefined when there was none. */
export async function deleteOpenInvitation(
  db: Kysely<DB>,
  orgId: string,
  id: string,
): Promise<{ email: string } | undefined> {
  return db
    .deleteFrom('invitations')
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('accepted_at', 'is', null)
    .returning('email')
    .executeTakeFirst();
}
