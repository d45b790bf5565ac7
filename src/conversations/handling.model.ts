import type { ConversationHandler, ConversationTable, HandoffBy } from './conversation.tables.js';

/** Who handles a conversation: the bot or people, the person assigned, the handoff. */

export interface Handoff {
  reason: string | null;
  note: string | null;
  by: HandoffBy;
  at: number;
}

export interface Handling {
  /** Who answers the end user: the agent's hook, or the people of the inbox. */
  handler: ConversationHandler;
  /** The person it is assigned to. */
  assignee: { id: string; name: string } | null;
  /** The handoff that gave it to people; null while the bot handles it. */
  handoff: Handoff | null;
}

/** Who handles a conversation, as reads and `conversation.*` events show it. */
export function handlingOf(row: ConversationTable): Handling {
  const handler = row.handler ?? 'bot';
  return {
    handler,
    assignee:
      row.assignee_id !== null && row.assignee_id !== undefined
        ? { id: row.assignee_id, name: row.assignee_name ?? row.assignee_id }
        : null,
    handoff:
      handler === 'human' && row.handoff_by && row.handoff_at !== null && row.handoff_at !== undefined
        ? {
            reason: row.handoff_reason ?? null,
            note: row.handoff_note ?? null,
            by: row.handoff_by,
            at: Number(row.handoff_at),
          }
        : null,
  };
}
