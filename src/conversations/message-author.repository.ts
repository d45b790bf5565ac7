import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../db/db-errors.js';
import type { DB } from '../db/schema.js';
import type { MessageAuthorTable } from './conversation.tables.js';

/** SQL of who sent a message the bot did not: a person, or Parley. */

/**
 * Records the author of a message about to be sent, under the message's ID: the claim that makes a
 * repeated send (a double click, a job run again) go out once. False when it was claimed already.
 */
export async function claimAuthor(db: Kysely<DB>, row: MessageAuthorTable): Promise<boolean> {
  try {
    await db.insertInto('message_authors').values(row).execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

export async function deleteAuthor(db: Kysely<DB>, messageId: string): Promise<void> {
  await db.deleteFrom('message_authors').where('message_id', '=', messageId).execute();
}

export async function findAuthor(db: Kysely<DB>, messageId: string): Promise<MessageAuthorTable | undefined> {
  return db.selectFrom('message_authors').selectAll().where('message_id', '=', messageId).executeTakeFirst();
}

/** The authors of these messages (those the bot sent have none). */
export async function authorsOf(db: Kysely<DB>, messageIds: readonly string[]): Promise<MessageAuthorTable[]> {
  if (messageIds.length === 0) return [];
  return db
    .selectFrom('message_authors')
    .selectAll()
    .where('message_id', 'in', [...messageIds])
    .execute();
}

/** Whether a message with this ID was stored (a claimed send that reached the send path). */
export async function messageExists(db: Kysely<DB>, id: string): Promise<boolean> {
  return (await db.selectFrom('messages').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}
