import type { Kysely } from 'kysely';
import { type Seek, seekPage } from '../db/keyset.js';
import type { DB } from '../db/schema.js';
import type { ConversationTable } from './conversation.tables.js';

/**
 * The dashboard's conversation list: a page of conversations with what a person reads in each row
 * (the end user's name and phone, what started it, the last message each way) in one statement.
 * The page is a seek on conversations_org_started_idx; every other table is read by its key or
 * by the newest row of the conversation's own index, so a page reads about `limit` rows of each.
 */

export interface ConversationSummaryRow extends ConversationTable {
  end_user_name: string | null;
  end_user_phone: string | null;
  trigger_name: string | null;
  campaign_name: string | null;
  out_type: 'template' | 'message' | null;
  out_text: string | null;
  out_template: string | null;
  out_at: number | null;
  in_type: string | null;
  in_text: string | null;
  in_at: number | null;
  /** Whether the conversation opened with a message of the end user's (1 or 0, true or false by database). */
  customer_started: number | boolean | null;
}

export async function listConversationSummaryRows(
  db: Kysely<DB>,
  orgId: string,
  filter: { agentId?: string | undefined; status?: 'open' | 'closed' | undefined },
  seek: Seek | undefined,
  limit: number,
): Promise<ConversationSummaryRow[]> {
  let query = db
    .selectFrom('conversations as c')
    .leftJoin('end_users as eu', 'eu.id', 'c.end_user_id')
    .leftJoin('campaigns as cmp', 'cmp.id', 'c.campaign_id')
    .leftJoin('triggers as t', (j) => j.onRef('t.agent_id', '=', 'c.agent_id').onRef('t.id', '=', 'c.trigger_id'))
    .leftJoin('messages as mo', (j) =>
      j.on((eb) =>
        eb(
          'mo.id',
          '=',
          eb
            .selectFrom('messages as m2')
            .select('m2.id')
            .whereRef('m2.conversation_id', '=', 'c.id')
            // The newest by the index alone (a tie in one millisecond may show either).
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
    .select((eb) => [
      'eu.name as end_user_name',
      'eu.phone as end_user_phone',
      't.name as trigger_name',
      'cmp.name as campaign_name',
      'mo.type as out_type',
      'mo.text as out_text',
      'mo.template_name as out_template',
      'mo.created_at as out_at',
      'mi.type as in_type',
      'mi.text as in_text',
      'mi.received_at as in_at',
      // An inbound conversation opens at its first message's own time (conversations/inbound.ts).
      eb
        .exists(
          eb
            .selectFrom('inbound_messages as i3')
            .select('i3.provider_message_id')
            .whereRef('i3.conversation_id', '=', 'c.id')
            .whereRef('i3.sent_at', '<=', 'c.started_at'),
        )
        .as('customer_started'),
    ])
    .where('c.org_id', '=', orgId);
  if (filter.agentId !== undefined) query = query.where('c.agent_id', '=', filter.agentId);
  if (filter.status !== undefined) query = query.where('c.status', '=', filter.status);
  const rows = await seekPage(query, { at: 'c.started_at', id: 'c.id' }, { newestFirst: true, seek, limit }).execute();
  return rows.map((r) => ({
    ...r,
    out_at: r.out_at === null ? null : Number(r.out_at),
    in_at: r.in_at === null ? null : Number(r.in_at),
  }));
}
