import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { ConversationTable, HandoffBy } from './conversation.tables.js';

/** SQL of who handles a conversation: handoffs, releases, assignments, and who waits for a person. */

/**
 * Hands an open conversation the bot holds to people; undefined when it is closed or people hold
 * it already (the caller reads it again). With `assignee`, assigned to that person at once.
 */
export async function setHandedOff(
  db: Kysely<DB>,
  orgId: string,
  id: string,
  handoff: {
    reason: string | null;
    note: string | null;
    by: HandoffBy;
    at: number;
    assignee?: { id: string; name: string } | undefined;
  },
): Promise<ConversationTable | undefined> {
  return db
    .updateTable('conversations')
    .set({
      handler: 'human',
      handoff_reason: handoff.reason,
      handoff_note: handoff.note,
      handoff_by: handoff.by,
      handoff_at: handoff.at,
      // The end user waits when the bot or Parley handed over; a person taking over answers next.
      waiting_since: handoff.by === 'user' ? null : handoff.at,
      human_replied_at: null,
      updated_at: handoff.at,
      ...(handoff.assignee ? { assignee_id: handoff.assignee.id, assignee_name: handoff.assignee.name } : {}),
    })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('status', '=', 'open')
    .where('handler', '!=', 'human')
    .returningAll()
    .executeTakeFirst();
}

/** Back to the bot (no assignee, no handoff, nobody waiting); undefined when the bot holds it already. */
export async function setReleased(
  db: Kysely<DB>,
  orgId: string,
  id: string,
  at: number,
): Promise<ConversationTable | undefined> {
  return db
    .updateTable('conversations')
    .set({
      handler: 'bot',
      assignee_id: null,
      assignee_name: null,
      handoff_reason: null,
      handoff_note: null,
      handoff_by: null,
      handoff_at: null,
      waiting_since: null,
      updated_at: at,
    })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('handler', '=', 'human')
    .returningAll()
    .executeTakeFirst();
}

/** Assigns an open conversation people hold (null: to nobody); undefined when it is not such a one. */
export async function setAssignee(
  db: Kysely<DB>,
  orgId: string,
  id: string,
  assignee: { id: string; name: string } | null,
  at: number,
): Promise<ConversationTable | undefined> {
  return db
    .updateTable('conversations')
    .set({ assignee_id: assignee?.id ?? null, assignee_name: assignee?.name ?? null, updated_at: at })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('status', '=', 'open')
    .where('handler', '=', 'human')
    .returningAll()
    .executeTakeFirst();
}

/** The end user wrote while people hold the conversation: they wait for an answer from now, unless already. */
export async function markWaiting(db: Kysely<DB>, id: string, at: number): Promise<void> {
  await db
    .updateTable('conversations')
    .set((eb) => ({ waiting_since: eb.fn.coalesce('waiting_since', eb.val(at)) }))
    .where('id', '=', id)
    .where('handler', '=', 'human')
    .execute();
}

/** A person answered: nobody waits; the first answer since the handoff is kept. */
export async function markAnswered(
  db: Kysely<DB>,
  id: string,
  at: number,
): Promise<{ handoff_at: number | null; human_replied_at: number | null } | undefined> {
  const before = await db
    .selectFrom('conversations')
    .select(['handoff_at', 'human_replied_at'])
    .where('id', '=', id)
    .executeTakeFirst();
  await db
    .updateTable('conversations')
    .set((eb) => ({ waiting_since: null, human_replied_at: eb.fn.coalesce('human_replied_at', eb.val(at)) }))
    .where('id', '=', id)
    .execute();
  return before
    ? {
        handoff_at: before.handoff_at === null || before.handoff_at === undefined ? null : Number(before.handoff_at),
        human_replied_at:
          before.human_replied_at === null || before.human_replied_at === undefined
            ? null
            : Number(before.human_replied_at),
      }
    : undefined;
}

/** A person removed from the organization is no longer anyone's assignee. */
export async function clearAssigneeEverywhere(db: Kysely<DB>, orgId: string, userId: string): Promise<void> {
  await db
    .updateTable('conversations')
    .set({ assignee_id: null, assignee_name: null })
    .where('org_id', '=', orgId)
    .where('assignee_id', '=', userId)
    .execute();
}

/** How many open conversations of the organization wait for a person (the inbox's count). */
export async function countWaitingRows(db: Kysely<DB>, orgId: string): Promise<number> {
  const row = await db
    .selectFrom('conversations')
    .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
    .where('org_id', '=', orgId)
    .where('status', '=', 'open')
    .where('handler', '=', 'human')
    .where('waiting_since', 'is not', null)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The same across every organization, for the metrics. */
export async function countAllWaitingRows(db: Kysely<DB>): Promise<number> {
  const row = await db
    .selectFrom('conversations')
    .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
    .where('status', '=', 'open')
    .where('handler', '=', 'human')
    .where('waiting_since', 'is not', null)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
