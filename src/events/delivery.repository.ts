import type { Insertable, Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { EventDeliveryStatus, EventDeliveryTable } from './event.tables.js';

/**
 * Records deliveries (at most a few hundred rows: one statement's parameters); a delivery of an
 * event an endpoint already has is skipped. Resolves with the IDs recorded now.
 */
export async function insertDeliveries(
  db: Kysely<DB>,
  rows: readonly Insertable<EventDeliveryTable>[],
): Promise<{ id: string }[]> {
  return db
    .insertInto('event_deliveries')
    .values(rows)
    .onConflict((oc) => oc.columns(['endpoint_id', 'event_id']).doNothing())
    .returning('id')
    .execute();
}

export async function deleteDeliveriesOfEndpoint(db: Kysely<DB>, endpointId: string): Promise<void> {
  await db.deleteFrom('event_deliveries').where('endpoint_id', '=', endpointId).execute();
}

/** The deliveries of an endpoint (only the failed ones with `failed`), newest first. */
export async function listDeliveryRows(
  db: Kysely<DB>,
  endpointId: string,
  options: { failed?: boolean; limit: number },
): Promise<EventDeliveryTable[]> {
  let query = db.selectFrom('event_deliveries').selectAll().where('endpoint_id', '=', endpointId);
  if (options.failed) query = query.where('status', '=', 'failed');
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(options.limit).execute();
}

export async function findDeliveryRow(
  db: Kysely<DB>,
  orgId: string,
  deliveryId: string,
): Promise<EventDeliveryTable | undefined> {
  return db
    .selectFrom('event_deliveries')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', deliveryId)
    .executeTakeFirst();
}

/** Pending again, to be sent from its first attempt. */
export async function setDeliveryPending(db: Kysely<DB>, deliveryId: string, at: number): Promise<void> {
  await db
    .updateTable('event_deliveries')
    .set({ status: 'pending', updated_at: at })
    .where('id', '=', deliveryId)
    .execute();
}

/** The organization of a delivery, whichever it is. */
export async function findDeliveryOrg(db: Kysely<DB>, deliveryId: string): Promise<{ org_id: string } | undefined> {
  return db.selectFrom('event_deliveries').select('org_id').where('id', '=', deliveryId).executeTakeFirst();
}

/** A delivery with what sending it needs from its endpoint (undefined once deleted with it). */
export async function findDeliveryToSend(db: Kysely<DB>, deliveryId: string) {
  return db
    .selectFrom('event_deliveries as d')
    .innerJoin('event_endpoints as e', 'e.id', 'd.endpoint_id')
    .select([
      'd.id',
      'd.event_id',
      'd.payload',
      'd.status',
      'd.created_at',
      'e.id as endpoint_id',
      'e.url',
      'e.secret',
      'e.previous_secret',
      'e.previous_secret_until',
      'e.disabled_at',
      'e.disabled_reason',
    ])
    .where('d.id', '=', deliveryId)
    .executeTakeFirst();
}

/** One attempt's outcome: counted, its status code and error kept, delivered stamped. */
export async function recordDeliveryAttempt(
  db: Kysely<DB>,
  deliveryId: string,
  outcome: { status: EventDeliveryStatus; code: number | null; error: string | null },
  now: number,
): Promise<void> {
  await db
    .updateTable('event_deliveries')
    .set((eb) => ({
      status: outcome.status,
      attempts: eb('attempts', '+', 1),
      last_status_code: outcome.code,
      last_error: outcome.error,
      updated_at: now,
      ...(outcome.status === 'delivered' ? { delivered_at: now } : {}),
    }))
    .where('id', '=', deliveryId)
    .execute();
}

/** Failed for good, unless it was delivered. */
export async function setDeliveryFailed(db: Kysely<DB>, deliveryId: string, error: string, at: number): Promise<void> {
  await db
    .updateTable('event_deliveries')
    .set({ status: 'failed', last_error: error, updated_at: at })
    .where('id', '=', deliveryId)
    .where('status', '!=', 'delivered')
    .execute();
}

/** Every delivery of one event (one per endpoint that wanted it), with its endpoint's address. */
export async function listDeliveryRowsOfEvent(
  db: Kysely<DB>,
  orgId: string,
  eventId: string,
): Promise<(EventDeliveryTable & { url: string })[]> {
  return db
    .selectFrom('event_deliveries as d')
    .innerJoin('event_endpoints as e', 'e.id', 'd.endpoint_id')
    .selectAll('d')
    .select('e.url')
    .where('d.org_id', '=', orgId)
    .where('d.event_id', '=', eventId)
    .orderBy('d.id')
    .execute();
}

/** Whether an endpoint bound to the agent answered this event with a 2xx. */
export async function isDeliveredToAgentEndpoint(
  db: Kysely<DB>,
  orgId: string,
  eventId: string,
  agentId: string,
): Promise<boolean> {
  const row = await db
    .selectFrom('event_deliveries as d')
    .innerJoin('event_endpoints as e', 'e.id', 'd.endpoint_id')
    .select('d.id')
    .where('d.org_id', '=', orgId)
    .where('d.event_id', '=', eventId)
    .where('e.agent_id', '=', agentId)
    .where('d.status', '=', 'delivered')
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
