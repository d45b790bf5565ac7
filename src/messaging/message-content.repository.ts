import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { OutboundContent } from './outbound-content.js';

/** Rows of `message_contents`: what a rich send carried beside its text. */

export async function insertMessageContent(
  db: Kysely<DB>,
  row: { messageId: string; orgId: string; content: OutboundContent },
): Promise<void> {
  await db
    .insertInto('message_contents')
    .values({ message_id: row.messageId, org_id: row.orgId, content: JSON.stringify(row.content) })
    .onConflict((oc) => oc.column('message_id').doNothing())
    .execute();
}

/** The contents of these messages (a page of a thread), by message ID. */
export async function findMessageContents(
  db: Kysely<DB>,
  orgId: string,
  messageIds: readonly string[],
): Promise<Map<string, OutboundContent>> {
  if (messageIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('message_contents')
    .select(['message_id', 'content'])
    .where('org_id', '=', orgId)
    .where('message_id', 'in', [...messageIds])
    .execute();
  return new Map(rows.map((r) => [r.message_id, JSON.parse(r.content) as OutboundContent]));
}
