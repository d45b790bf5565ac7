import { type EventDeps, emitEvent, eventId } from '../events/event.service.js';
import type { ConversationTable } from './conversation.tables.js';
import { handlingOf } from './handling.model.js';

/**
 * The events of who handles a conversation: `conversation.handoff` (to people),
 * `conversation.released` (back to the bot) and `conversation.assigned`, each with the
 * conversation's handler, assignee and handoff as they are after it. Their IDs are derived from the
 * conversation and the time of the change (a fallback's from the message that caused it), so work
 * that runs again raises the same event.
 */

/** Who did it: the agent (its API key), a person of the dashboard, or Parley (a fallback). */
export type Actor =
  | { readonly type: 'agent' }
  | { readonly type: 'user'; readonly id: string; readonly name: string }
  | { readonly type: 'parley' };

const dataOf = (row: ConversationTable) => ({
  conversationId: row.id,
  agentId: row.agent_id,
  endUserId: row.end_user_id,
  ...handlingOf(row),
});

export function emitHandoff(deps: EventDeps, row: ConversationTable, by: Actor, key?: string): Promise<string[]> {
  const at = Number(row.handoff_at ?? row.updated_at);
  return emitEvent(deps, {
    id: eventId('conversation.handoff', key ?? `${row.id}\u0000${at}`),
    type: 'conversation.handoff',
    orgId: row.org_id,
    agentId: row.agent_id,
    at,
    data: { ...dataOf(row), by },
  });
}

export function emitReleased(deps: EventDeps, row: ConversationTable, by: Actor): Promise<string[]> {
  const at = Number(row.updated_at);
  return emitEvent(deps, {
    id: eventId('conversation.released', `${row.id}\u0000${at}`),
    type: 'conversation.released',
    orgId: row.org_id,
    agentId: row.agent_id,
    at,
    data: { ...dataOf(row), by },
  });
}

export function emitAssigned(deps: EventDeps, row: ConversationTable, by: Actor): Promise<string[]> {
  const at = Number(row.updated_at);
  return emitEvent(deps, {
    id: eventId('conversation.assigned', `${row.id}\u0000${at}\u0000${row.assignee_id ?? ''}`),
    type: 'conversation.assigned',
    orgId: row.org_id,
    agentId: row.agent_id,
    at,
    data: { ...dataOf(row), by },
  });
}
