import { type EventDeps, emitEvents, enabledEndpointsOf } from '../events/event.service.js';
import { publishLive } from '../live/index.js';
import { findMessageAgent, type StatusEvent } from '../messaging/index.js';
import { messageStatusEvent } from './conversation.events.js';

/**
 * Tells the agent of statuses of one of its messages (`message.status`, one event per status): from
 * a status webhook, or from statuses that arrived before the send finished and were applied by it.
 */
export async function raiseMessageStatuses(
  deps: EventDeps,
  id: string,
  providerMessageId: string,
  statuses: readonly StatusEvent[],
): Promise<void> {
  if (statuses.length === 0) return;
  const message = await findMessageAgent(deps.db, id);
  if (!message) return;
  const of = { orgId: message.org_id, agentId: message.agent_id, conversationId: message.conversation_id };
  await raiseStatusesOfMessages(
    deps,
    statuses.map((event) => ({ message: of, providerMessageId, event })),
  );
}

/**
 * `raiseMessageStatuses` for the statuses of many messages at once, whose organizations and agents
 * the caller knows: the organizations' endpoints read in one statement, and the deliveries of all
 * the events recorded together (`emitEvents`). In the order given.
 */
export async function raiseStatusesOfMessages(
  deps: EventDeps,
  statuses: readonly {
    readonly message: { readonly orgId: string; readonly agentId: string; readonly conversationId: string | null };
    readonly providerMessageId: string;
    readonly event: StatusEvent;
  }[],
): Promise<void> {
  // Open inbox pages show the ticks: told once per organization, whoever listens to events.
  const byOrg = new Map<string, Set<string>>();
  for (const { message } of statuses) {
    if (message.conversationId === null) continue;
    const ids = byOrg.get(message.orgId) ?? new Set<string>();
    ids.add(message.conversationId);
    byOrg.set(message.orgId, ids);
  }
  for (const [orgId, ids] of byOrg) await publishLive(deps.db, { orgId, conversationIds: [...ids], kind: 'status' });
  const endpoints = await enabledEndpointsOf(
    deps.db,
    statuses.map((s) => s.message.orgId),
  );
  if (endpoints.length === 0) return;
  const events = statuses.map(({ message, providerMessageId, event }) =>
    messageStatusEvent({
      orgId: message.orgId,
      agentId: message.agentId,
      conversationId: message.conversationId,
      messageId: providerMessageId,
      status: event.status,
      error: event.status === 'failed' ? { code: event.errorCode, message: event.errorMessage } : null,
      at: event.occurredAt,
    }),
  );
  await emitEvents(deps, events, endpoints);
}
