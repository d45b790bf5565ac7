import { type EventDeps, type EventToEmit, emitEvent, eventId } from '../events/event.service.js';
import type { InboundEventFields } from '../messaging/index.js';
import type { ConversationTable } from './conversation.tables.js';
import { handlingOf } from './handling.model.js';

/**
 * The four events of a conversation, each raised with an ID derived from what raised it, so that
 * work which runs again (a retried job, a replayed webhook) raises the same event, delivered once.
 */

export interface StartedEndUser {
  readonly id: string;
  readonly name: string | null;
  readonly phone: string | null;
  readonly email: string | null;
}

/** `conversation.started`: once the opening message went out (or came in). */
export function emitConversationStarted(
  deps: EventDeps,
  row: ConversationTable,
  opening: { readonly endUser: StartedEndUser; readonly messageId: string | null; readonly at: number },
): Promise<string[]> {
  return emitEvent(deps, {
    id: eventId('conversation.started', row.id),
    type: 'conversation.started',
    orgId: row.org_id,
    agentId: row.agent_id,
    at: opening.at,
    data: {
      conversationId: row.id,
      agentId: row.agent_id,
      triggerId: row.trigger_id,
      campaignId: row.campaign_id,
      endUser: opening.endUser,
      context: row.context === null ? null : (JSON.parse(row.context) as unknown),
      messageId: opening.messageId,
      ...handlingOf(row),
    },
  });
}

/** `message.received`: an end user wrote to the agent's number. */
export function emitMessageReceived(
  deps: EventDeps,
  message: {
    readonly orgId: string;
    readonly agentId: string;
    readonly conversationId: string;
    readonly endUserId: string | null;
    readonly from: string;
    readonly messageId: string;
    /** `type`, `text`, and what the kind carries (`media`, `location`, `reply`, `reaction`, `contacts`, `replyTo`). */
    readonly fields: InboundEventFields;
    readonly at: number;
    /** false while a person holds the conversation: only the organization's endpoints hear it. */
    readonly toAgentHook?: boolean;
  },
): Promise<string[]> {
  return emitEvent(deps, {
    id: eventId('message.received', message.messageId),
    type: 'message.received',
    orgId: message.orgId,
    agentId: message.agentId,
    ...(message.toAgentHook === false ? { toAgentHook: false } : {}),
    at: message.at,
    data: {
      conversationId: message.conversationId,
      agentId: message.agentId,
      endUserId: message.endUserId,
      from: message.from,
      messageId: message.messageId,
      ...message.fields,
    },
  });
}

/**
 * `message.status`, the provider reported on an outbound message: the event of a status (its ID
 * derived from the message and the status), raised by `raiseMessageStatuses`.
 */
export function messageStatusEvent(status: MessageStatusOfAgent): EventToEmit {
  return {
    id: eventId('message.status', `${status.messageId}\u0000${status.status}`),
    type: 'message.status',
    orgId: status.orgId,
    agentId: status.agentId,
    at: status.at,
    data: {
      conversationId: status.conversationId,
      agentId: status.agentId,
      messageId: status.messageId,
      status: status.status,
      ...(status.error ? { error: status.error } : {}),
    },
  };
}

/** What `message.status` says of a status of one of an agent's messages. */
export interface MessageStatusOfAgent {
  readonly orgId: string;
  readonly agentId: string;
  readonly conversationId: string | null;
  /** The provider's message ID. */
  readonly messageId: string;
  readonly status: string;
  readonly error: { readonly code: number | null; readonly message: string | null } | null;
  readonly at: number;
}

/** `conversation.closed`: by the agent (`closed`) or after the idle time (`idle`). */
export function emitConversationClosed(
  deps: EventDeps,
  row: ConversationTable,
  reason: 'closed' | 'idle',
): Promise<string[]> {
  return emitEvent(deps, {
    id: eventId('conversation.closed', row.id),
    type: 'conversation.closed',
    orgId: row.org_id,
    agentId: row.agent_id,
    at: Number(row.closed_at ?? row.updated_at),
    data: {
      conversationId: row.id,
      agentId: row.agent_id,
      endUserId: row.end_user_id,
      reason,
      closedAt: Number(row.closed_at ?? row.updated_at),
      ...handlingOf(row),
    },
  });
}
