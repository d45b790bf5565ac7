import { createHash } from 'node:crypto';
import type { Insertable, Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { EVENT_DELIVERY_QUEUE } from '../jobs/queues.js';
import type { Clock } from '../shared/clock.js';
import { newId } from '../shared/ids.js';
import { insertDeliveries, isDeliveredToAgentEndpoint } from './delivery.repository.js';
import { type EventEndpointOfOrg, listEnabledEndpointRows } from './endpoint.repository.js';
import type { EventDeliveryTable } from './event.tables.js';

export type { EventEndpointOfOrg };

/** Every kind of event an endpoint can receive. */
export const EVENT_TYPES = [
  'conversation.started',
  'message.received',
  'message.status',
  'conversation.closed',
  'conversation.handoff',
  'conversation.released',
  'conversation.assigned',
  'message.sent',
  'enduser.opted_out',
  'enduser.opted_in',
  'campaign.paused',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const isEventType = (value: string): value is EventType => (EVENT_TYPES as readonly string[]).includes(value);

export { EVENT_DELIVERY_QUEUE };

/** What a delivery job carries. */
export interface EventDeliveryJob {
  readonly deliveryId: string;
}

export interface EventToEmit {
  /**
   * The event's ID, the `webhook-id` of every delivery of it. Derived from what raised the event
   * (`eventId()`), so that work which runs again (a retried job) raises the same event, which each
   * endpoint then receives once.
   */
  readonly id: string;
  readonly type: EventType;
  readonly orgId: string;
  /** The agent the event is about: endpoints bound to another agent never receive it. */
  readonly agentId: string;
  /**
   * false: not for the agent's own hook (endpoints bound to the agent), only for the
   * organization's endpoints: a `message.received` while a person holds the conversation.
   */
  readonly toAgentHook?: boolean;
  readonly data: Record<string, unknown>;
  /** When it happened (ms); the body's `timestamp`. */
  readonly at: number;
}

/** The parts of the context emitting needs (a service verb passes its own, or a transaction's db). */
export interface EventDeps {
  readonly db: Kysely<DB>;
  readonly jobs: JobRunner;
  readonly clock: Clock;
}

/** A stable event ID for `type` raised by `key` (a provider message ID and status, a conversation ID...). */
export function eventId(type: EventType, key: string): string {
  return `evt_${createHash('sha256').update(`${type}\u0000${key}`).digest('base64url').slice(0, 27)}`;
}

/** The JSON body every endpoint receives: `{"type", "timestamp", "data"}`. */
export function eventBody(event: Pick<EventToEmit, 'type' | 'data' | 'at'>): string {
  return JSON.stringify({ type: event.type, timestamp: new Date(event.at).toISOString(), data: event.data });
}

/** The enabled event endpoints of these organizations, in one statement (for `emitEvents`' `known`). */
export async function enabledEndpointsOf(db: Kysely<DB>, orgIds: readonly string[]): Promise<EventEndpointOfOrg[]> {
  if (orgIds.length === 0) return [];
  return listEnabledEndpointRows(db, orgIds);
}

/** Whether the agent has a hook of its own (an enabled endpoint bound to it) that receives `type`. */
export async function agentHookReceives(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
  type: EventType,
): Promise<boolean> {
  const endpoints = await enabledEndpointsOf(db, [orgId]);
  return endpoints.some((e) => e.agent_id === agentId && (e.events === '*' || e.events.split(',').includes(type)));
}

/** Whether the agent's own hook acknowledged (answered 2xx) the event. */
export function agentHookAcknowledged(db: Kysely<DB>, orgId: string, id: string, agentId: string): Promise<boolean> {
  return isDeliveredToAgentEndpoint(db, orgId, id, agentId);
}

/**
 * Records one delivery of the event per endpoint that wants it (the organization's endpoints not
 * bound to another agent, enabled, subscribed to its type) and queues them, in one transaction (or
 * in the caller's, `deps.db` being one): nothing raised is lost, and nothing is delivered twice
 * to an endpoint. Resolves with the deliveries made now.
 */
export function emitEvent(deps: EventDeps, event: EventToEmit): Promise<string[]> {
  return emitEvents(deps, [event]);
}

/** Deliveries recorded by one statement at most (its parameters stay well under SQLite's limit). */
const DELIVERIES_PER_INSERT = 500;

/**
 * `emitEvent` for many events at once, in one transaction (or the caller's): the deliveries of all
 * of them recorded by one statement and their jobs stored by another. `known`: the enabled
 * endpoints of every event's organization, when the caller has read them (else read here, once).
 */
export async function emitEvents(
  deps: EventDeps,
  events: readonly EventToEmit[],
  known?: readonly EventEndpointOfOrg[],
): Promise<string[]> {
  if (events.length === 0) return [];
  const run = async (trx: Kysely<DB>) => {
    const now = deps.clock.now();
    const endpoints =
      known ??
      (await enabledEndpointsOf(
        trx,
        events.map((e) => e.orgId),
      ));
    const rows: Insertable<EventDeliveryTable>[] = [];
    for (const event of events) {
      // The organization's endpoints not bound to another agent (nor to this one, when the event is
      // not for its hook), subscribed to the event's type.
      const wanted = endpoints.filter(
        (e) =>
          e.org_id === event.orgId &&
          (e.agent_id === null || (e.agent_id === event.agentId && event.toAgentHook !== false)) &&
          (e.events === '*' || e.events.split(',').includes(event.type)),
      );
      if (wanted.length === 0) continue;
      const payload = eventBody(event);
      for (const endpoint of wanted) {
        rows.push({
          id: newId('dlv'),
          endpoint_id: endpoint.id,
          org_id: event.orgId,
          event_id: event.id,
          event_type: event.type,
          payload,
          status: 'pending',
          attempts: 0,
          last_status_code: null,
          last_error: null,
          created_at: now,
          updated_at: now,
          delivered_at: null,
        });
      }
    }
    const made: string[] = [];
    for (let i = 0; i < rows.length; i += DELIVERIES_PER_INSERT) {
      // An event an endpoint already has (work that ran again) is recorded once.
      const inserted = await insertDeliveries(trx, rows.slice(i, i + DELIVERIES_PER_INSERT));
      for (const { id } of inserted) made.push(id);
    }
    await deps.jobs.enqueueMany<EventDeliveryJob>(
      EVENT_DELIVERY_QUEUE,
      made.map((deliveryId) => ({ deliveryId })),
      { db: trx },
    );
    return made;
  };
  const made = deps.db.isTransaction ? await run(deps.db) : await deps.db.transaction().execute(run);
  return made;
}
