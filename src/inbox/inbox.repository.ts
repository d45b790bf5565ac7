import type { Kysely } from 'kysely';
import type { ConversationNoteTable, ConversationTable } from '../conversations/conversation.tables.js';
import type { DB } from '../db/schema.js';

/**
 * SQL of the inbox: its list (open conversations by who handles them, newest activity first, with
 * the end user and the last message each way, in one statement) and the team's notes.
 */

export interface InboxRow extends ConversationTable {
  end_user_name: string | null;
  end_user_phone: string | null;
  out_type: 'template' | 'message' | null;
  out_text: string | null;
  out_template: string | null;
  out_at: number | null;
  in_type: string | null;
  in_text: string | null;
  in_at: number | null;
}

export interface InboxFilter {
  /** Only those people hold (else every open conversation, the bot's too). */
  readonly people: boolean;
  /** Only those assigned to this person; null: to nobody. */
  readonly assigneeId?: string | null;
}

export async function listInboxRows(
  db: Kysely<DB>,
  orgId: string,
  filter: InboxFilter,
  limit: number,
): Promise<InboxRow[]> {
  let query = db
    .selectFrom('conversations as c')
    .leftJoin('end_users as eu', 'eu.id', 'c.end_user_id')
    .leftJoin('messages as mo', (j) =>
      j.on((eb) =>
        eb(
          'mo.id',
          '=',
          eb
            .selectFrom('messages as m2')
            .select('m2.id')
            .whereRef('m2.conversation_id', '=', 'c.id')
            .orderBy('m2.created_at', 'desc')
            .limit(1),
        ),
      ),
    )
    .leftJoin('inbound_messages as mi', (j) =>
      j.on((eb) =>
        eb(
          'mi.provider_message_id',
          '=',
          eb
            .selectFrom('inbound_messages as i2')
            .select('i2.provider_message_id')
            .whereRef('i2.conversation_id', '=', 'c.id')
            .orderBy('i2.received_at', 'desc')
            .limit(1),
        ),
      ),
    )
    .selectAll('c')
    .select([
      'eu.name as end_user_name',
      'eu.phone as end_user_phone',
      'mo.type as out_type',
      'mo.text as out_text',
      'mo.template_name as out_template',
      'mo.created_at as out_at',
      'mi.type as in_type',
      'mi.text as in_text',
      'mi.received_at as in_at',
    ])
    .where('c.org_id', '=', orgId)
    .where('c.status', '=', 'open');
  if (filter.people) query = query.where('c.handler', '=', 'human');
  if (filter.assigneeId !== undefined) {
    query =
      filter.assigneeId === null
        ? query.where('c.assignee_id', 'is', null)
        : query.where('c.assignee_id', '=', filter.assigneeId);
  }
  const rows = await query.orderBy('c.last_message_at', 'desc').orderBy('c.id', 'desc').limit(limit).execute();
  return rows.map((r) => ({
    ...r,
    out_at: r.out_at === null ? null : Number(r.out_at),
    in_at: r.in_at === null ? null : Number(r.in_at),
  }));
}

export async function insertNote(db: Kysely<DB>, row: ConversationNoteTable): Promise<void> {
  await db.insertInto('conversation_notes').values(row).execute();
}

/** The newest `limit` notes of a conversation, oldest first. */
export async function listNoteRows(
  db: Kysely<DB>,
  orgId: string,
  conversationId: string,
  limit: number,
): Promise<ConversationNoteTable[]> {
  const rows = await db
    .selectFrom('conversation_notes')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('conversation_id', '=', conversationId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.reverse();
}
