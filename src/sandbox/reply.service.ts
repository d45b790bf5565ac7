import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { deliveriesOfEvent } from '../events/endpoint.service.js';
import { eventId } from '../events/event.service.js';
import { findFirstOutboundSince, findInboundRow } from './sandbox.repository.js';

/**
 * What became of a message a user wrote in through the sandbox, for `parley sandbox inbound`:
 * which hooks were told of it (its `message.received` deliveries) and what the agent answered
 * (the next message sent in that conversation). Read from Parley's own database, by polling, so
 * it works from another process than the server's.
 */

const POLL_MS = 100;
const pause = () => new Promise((resolve) => setTimeout(resolve, POLL_MS));

export interface HookDelivery {
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly url: string;
  readonly status: 'pending' | 'delivered' | 'failed';
  readonly attempts: number;
  readonly lastError: string | null;
}

export interface HandOff {
  /** The conversation the message joined; null when it joined none (no agent was told). */
  readonly conversationId: string | null;
  readonly receivedAt: number;
  /** One per hook that wanted the event: none when the agent has no enabled hook. */
  readonly hooks: readonly HookDelivery[];
}

export interface AgentReply {
  readonly messageId: string;
  readonly type: 'template' | 'message';
  readonly text: string | null;
  readonly template: string | null;
  readonly status: string;
  readonly error: string | null;
}

async function hooksOf(db: Kysely<DB>, orgId: string, messageId: string): Promise<HookDelivery[]> {
  const deliveries = await deliveriesOfEvent(db, orgId, eventId('message.received', messageId));
  return deliveries.map((d) => ({
    deliveryId: d.id,
    endpointId: d.endpointId,
    url: d.url,
    status: d.status,
    attempts: d.attempts,
    lastError: d.lastError,
  }));
}

/**
 * Waits (up to `timeoutMs`) until the applied inbound message has been joined to its conversation,
 * which records its `message.received` deliveries in the same transaction; then says who was told.
 */
export async function waitForHandOff(db: Kysely<DB>, messageId: string, timeoutMs: number): Promise<HandOff> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await findInboundRow(db, messageId);
    if (row?.conversation_id) {
      return {
        conversationId: row.conversation_id,
        receivedAt: Number(row.received_at),
        hooks: await hooksOf(db, row.org_id, messageId),
      };
    }
    if (Date.now() >= deadline) {
      return { conversationId: null, receivedAt: row ? Number(row.received_at) : 0, hooks: [] };
    }
    await pause();
  }
}

/**
 * Waits (up to `timeoutMs`) for the agent's answer: the first message sent in the conversation
 * since the inbound one arrived, once the provider has answered it (accepted, or refused). Gives up
 * early when every hook's delivery has failed for good, since then no bot heard the message.
 * Resolves with the answer, if any, and the hooks' deliveries as they stand.
 */
export async function waitForReply(
  db: Kysely<DB>,
  orgId: string,
  messageId: string,
  handOff: HandOff,
  timeoutMs: number,
): Promise<{ reply: AgentReply | undefined; hooks: readonly HookDelivery[] }> {
  const deadline = Date.now() + timeoutMs;
  const conversationId = handOff.conversationId;
  let hooks = handOff.hooks;
  for (;;) {
    const row = conversationId
      ? await findFirstOutboundSince(db, orgId, conversationId, handOff.receivedAt)
      : undefined;
    const timedOut = Date.now() >= deadline;
    if (row && (row.status !== 'pending' || timedOut)) {
      return {
        reply: {
          messageId: row.provider_message_id ?? row.id,
          type: row.type,
          text: row.text,
          template: row.template_name,
          status: row.status,
          error: row.error_message,
        },
        hooks,
      };
    }
    hooks = await hooksOf(db, orgId, messageId);
    if (timedOut || (hooks.length > 0 && hooks.every((h) => h.status === 'failed'))) return { reply: undefined, hooks };
    await pause();
  }
}
