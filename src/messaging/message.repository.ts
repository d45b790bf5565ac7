import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { STATUS_RANK } from './message.model.js';

/** SQL of messages outside the hot path (that is in message.fast.ts); nothing else. */

export async function markSendFailed(
  db: Kysely<DB>,
  id: string,
  status: 'rejected' | 'unconfirmed',
  errorCode: number | null,
  errorMessage: string,
  at: number,
): Promise<void> {
  await db
    .updateTable('messages')
    .set({
      status,
      status_rank: STATUS_RANK[status],
      error_code: errorCode,
      error_message: errorMessage,
      updated_at: at,
    })
    .where('id', '=', id)
    .where('status_rank', '<=', STATUS_RANK.pending)
    .execute();
}

/** The organization, agent and conversation of a message (what its `message.status` events name). */
export async function findMessageAgent(
  db: Kysely<DB>,
  id: string,
): Promise<{ org_id: string; agent_id: string; conversation_id: string | null } | undefined> {
  return db
    .selectFrom('messages')
    .select(['org_id', 'agent_id', 'conversation_id'])
    .where('id', '=', id)
    .executeTakeFirst();
}
