import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { MessagingNumberTable } from '../messaging/messaging.tables.js';

/** The number with this phone, in whichever organization. */
export async function findNumberOwnerByPhone(
  db: Kysely<DB>,
  phone: string,
): Promise<Pick<MessagingNumberTable, 'id' | 'org_id'> | undefined> {
  return db.selectFrom('messaging_numbers').select(['id', 'org_id']).where('phone', '=', phone).executeTakeFirst();
}

/** The phone of the number with this provider phone number ID, in whichever organization. */
export async function findPhoneByPhoneNumberId(
  db: Kysely<DB>,
  phoneNumberId: string,
): Promise<Pick<MessagingNumberTable, 'phone'> | undefined> {
  return db
    .selectFrom('messaging_numbers')
    .select('phone')
    .where('phone_number_id', '=', phoneNumberId)
    .executeTakeFirst();
}

/** Throws a unique violation when the phone or the phone number ID is taken. */
export async function insertNumber(db: Kysely<DB>, row: MessagingNumberTable): Promise<void> {
  await db.insertInto('messaging_numbers').values(row).execute();
}

export async function findNumberRowByPhone(
  db: Kysely<DB>,
  orgId: string,
  phone: string,
): Promise<MessagingNumberTable | undefined> {
  return db
    .selectFrom('messaging_numbers')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('phone', '=', phone)
    .executeTakeFirst();
}

/** The numbers of an organization, oldest first. */
export async function listNumberRows(db: Kysely<DB>, orgId: string): Promise<MessagingNumberTable[]> {
  return db.selectFrom('messaging_numbers').selectAll().where('org_id', '=', orgId).orderBy('created_at').execute();
}

export async function findNumberRow(
  db: Kysely<DB>,
  orgId: string,
  numberId: string,
): Promise<MessagingNumberTable | undefined> {
  return db
    .selectFrom('messaging_numbers')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', numberId)
    .executeTakeFirst();
}

/** Sets the number of an agent of the organization; resolves with the number of agents changed (0 or 1). */
export async function setAgentNumber(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
  numberId: string,
): Promise<number> {
  const result = await db
    .updateTable('agents')
    .set({ number_id: numberId })
    .where('org_id', '=', orgId)
    .where('id', '=', agentId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The ID of the number with this phone, in whichever organization. */
export async function findNumberIdByPhone(
  db: Kysely<DB>,
  phone: string,
): Promise<Pick<MessagingNumberTable, 'id'> | undefined> {
  return db.selectFrom('messaging_numbers').select('id').where('phone', '=', phone).executeTakeFirst();
}
