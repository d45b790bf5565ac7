/**
 * The hot statements of a send from an agent's number. What this file promises: each statement is
 * built once and prepared once (`precompiled`: a named prepared statement on PostgreSQL, a
 * prepared better-sqlite3 statement on SQLite); on SQLite its writes join that event-loop turn's
 * group commit; on PostgreSQL the acceptances of one turn share one statement (`unnest`). What
 * depends on the database kind is decided here, not by the send.
 */
import { sql } from 'kysely';
import { touchConversation } from '../conversations/index.js';
import type { Database } from '../db/database.js';
import { batchedOnPostgres, onPostgresPool, precompiled, slot } from '../db/precompiled.js';
import { markAccepted, STATUS_RANK } from '../messaging/index.js';

/** The target agent and its number (of the same organization), in one query. */
export const agentWithNumber = precompiled((db) =>
  db
    .selectFrom('agents')
    .leftJoin('messaging_numbers', (join) =>
      join
        .onRef('messaging_numbers.id', '=', 'agents.number_id')
        .onRef('messaging_numbers.org_id', '=', 'agents.org_id'),
    )
    .select([
      'agents.id as agent_id',
      'messaging_numbers.id as number_id',
      'messaging_numbers.phone_number_id',
      'messaging_numbers.access_token_enc',
    ])
    .where('agents.org_id', '=', slot<string>(0))
    .where('agents.id', '=', slot<string>(1)),
);

/**
 * Whether the recipient read can store the message in the same statement (PostgreSQL only: one
 * round trip less; on SQLite a statement costs no round trip, so the send stores it on its own).
 */
export const recipientReadStoresMessage = (database: Pick<Database, 'dialect'>): boolean =>
  database.dialect === 'postgres';

/** PostgreSQL: the acceptance and the conversation's last message time in one statement. */
const acceptAndTouch = precompiled((db) =>
  db
    .with('accepted', (q) =>
      q
        .updateTable('messages')
        .set({
          provider_message_id: slot<string>(0),
          status: sql<string>`case when status_rank < ${STATUS_RANK.accepted} then 'accepted' else status end`,
          status_rank: sql<number>`case when status_rank < ${STATUS_RANK.accepted} then ${STATUS_RANK.accepted} else status_rank end`,
          updated_at: slot<number>(1),
        })
        .where('id', '=', slot<string>(2))
        .returning('id'),
    )
    .updateTable('conversations')
    .set({
      last_message_at: sql<number>`case when last_message_at < ${slot<number>(3)} then ${slot<number>(3)} else last_message_at end`,
      updated_at: slot<number>(1),
    })
    .where('id', '=', slot<string>(4)),
);

/**
 * PostgreSQL: the acceptances of several sends (one turn of the event loop's) in one statement. A
 * conversation that two of them touch moves on to the later of their times. The arrays are read
 * through sub-selects so that the planner cannot see their length: a plan made for the values at
 * hand looks cheaper than the generic one every time, so each run would be planned again (about a
 * third of the statement's time); this way the prepared statement keeps its one generic plan.
 */
const acceptManyAndTouch = precompiled((db) => ({
  compile: () =>
    sql`with v as (
      select * from unnest((select ${slot<string[]>(0)}::text[]), (select ${slot<string[]>(1)}::text[]),
        (select ${slot<number[]>(2)}::bigint[]), (select ${slot<(string | null)[]>(3)}::text[]),
        (select ${slot<(number | null)[]>(4)}::bigint[]))
        as v(id, provider_message_id, at, conversation_id, now)
    ), accepted as (
      update messages m set
        provider_message_id = v.provider_message_id,
        status = case when m.status_rank < ${sql.lit(STATUS_RANK.accepted)} then 'accepted' else m.status end,
        status_rank = case when m.status_rank < ${sql.lit(STATUS_RANK.accepted)} then ${sql.lit(STATUS_RANK.accepted)} else m.status_rank end,
        updated_at = v.at
      from v where m.id = v.id
    )
    update conversations c set
      last_message_at = case when c.last_message_at < t.now then t.now else c.last_message_at end,
      updated_at = t.at
    from (
      select conversation_id, max(now) as now, max(at) as at from v
      where conversation_id is not null group by conversation_id
    ) t
    where c.id = t.conversation_id`.compile(db),
}));

export interface Acceptance {
  readonly id: string;
  readonly providerMessageId: string;
  readonly at: number;
  readonly conversation: { id: string; now: number } | null;
}

/**
 * The provider's ID and the `accepted` status of a message, and its conversation moved on: one
 * statement on PostgreSQL (shared by the sends of one turn of the event loop), one commit on SQLite
 * (writes issued together share it).
 */
export const recordAcceptance = batchedOnPostgres<Acceptance, void>(
  async (db, { id, providerMessageId, at, conversation }) => {
    if (conversation && onPostgresPool(db)) {
      await acceptAndTouch(db, [providerMessageId, at, id, conversation.now, conversation.id]);
      return;
    }
    await Promise.all([
      markAccepted(db, id, providerMessageId, at),
      conversation ? touchConversation(db, conversation.id, conversation.now, at) : undefined,
    ]);
  },
  async (db, items) => {
    // In the order status batches lock messages (by provider ID): two batches touching the same
    // messages wait for each other rather than deadlock.
    const sorted = [...items].sort((x, y) =>
      x.providerMessageId < y.providerMessageId ? -1 : x.providerMessageId > y.providerMessageId ? 1 : 0,
    );
    await acceptManyAndTouch(db, [
      sorted.map((a) => a.id),
      sorted.map((a) => a.providerMessageId),
      sorted.map((a) => a.at),
      sorted.map((a) => a.conversation?.id ?? null),
      sorted.map((a) => a.conversation?.now ?? null),
    ]);
    return items.map(() => undefined);
  },
);
