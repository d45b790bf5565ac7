import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { UserTable } from './dashboard.tables.js';

/** SQL of the dashboard's people (`users`); nothing else. Their sessions are in session.repository.ts. */

export async function insertUser(db: Kysely<DB>, row: UserTable): Promise<void> {
  await db.insertInto('users').values(row).execute();
}

/** An organization's people, oldest first. */
export async function listUserRows(db: Kysely<DB>, orgId: string): Promise<UserTable[]> {
  return db.selectFrom('users').selectAll().where('org_id', '=', orgId).orderBy('created_at').orderBy('id').execute();
}

/** A person of the organization by ID or by (normalized) email. */
export async function findUserRow(
  db: Kysely<DB>,
  orgId: string,
  ref: { id: string } | { email: string },
): Promise<UserTable | undefined> {
  const query = db.selectFrom('users').selectAll().where('org_id', '=', orgId);
  return ('id' in ref ? query.where('id', '=', ref.id) : query.where('email', '=', ref.email)).executeTakeFirst();
}

export async function deleteUser(db: Kysely<DB>, orgId: string, userId: string): Promise<void> {
  await db.deleteFrom('users').where('id', '=', userId).where('org_id', '=', orgId).execute();
}

export async function setPasswordHash(db: Kysely<DB>, userId: string, passwordHash: string, at: number): Promise<void> {
  await db.updateTable('users').set({ password_hash: passwordHash, updated_at: at }).where('id', '=', userId).execute();
}

export async function setLastSignIn(db: Kysely<DB>, userId: string, at: number): Promise<void> {
  await db.updateTable('users').set({ last_sign_in_at: at }).where('id', '=', userId).execute();
}

/** How many owners the organization has (the last one cannot be removed). */
export async function countOwners(db: Kysely<DB>, orgId: string): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('org_id', '=', orgId)
    .where('role', '=', 'owner')
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
