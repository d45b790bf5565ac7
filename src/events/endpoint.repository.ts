import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { EventEndpointTable } from './event.tables.js';

/** An enabled event endpoint, as `enabledEndpointsOf` reads them. */
export interface EventEndpointOfOrg {
  readonly id: string;
  readonly org_id: string;
  readonly agent_id: string | null;
  readonly events: string;
}

/** The enabled event endpoints of these organizations (not empty), in one statement. */
export async function listEnabledEndpointRows(
  db: Kysely<DB>,
  orgIds: readonly string[],
): Promise<EventEndpointOfOrg[]> {
  return db
    .selectFrom('event_endpoints')
    .select(['id', 'org_id', 'agent_id', 'events'])
    .where('org_id', 'in', [...new Set(orgIds)])
    .where('disabled_at', 'is', null)
    .execute();
}

/** The ID of the organization's agent, for binding an endpoint to it. */
export async function findAgentIdInOrg(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
): Promise<{ id: string } | undefined> {
  return db.selectFrom('agents').select('id').where('org_id', '=', orgId).where('id', '=', agentId).executeTakeFirst();
}

export async function insertEndpoint(db: Kysely<DB>, row: EventEndpointTable): Promise<void> {
  await db.insertInto('event_endpoints').values(row).execute();
}

/** The endpoints of an organization, oldest first. */
export async function listEndpointRows(db: Kysely<DB>, orgId: string): Promise<EventEndpointTable[]> {
  return db
    .selectFrom('event_endpoints')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function findEndpointRow(
  db: Kysely<DB>,
  orgId: string,
  id: string,
): Promise<EventEndpointTable | undefined> {
  return db
    .selectFrom('event_endpoints')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Deletes the endpoint row (its deliveries first: `deleteDeliveriesOfEndpoint`). */
export async function deleteEndpointRow(db: Kysely<DB>, orgId: string, id: string): Promise<void> {
  await db.deleteFrom('event_endpoints').where('id', '=', id).where('org_id', '=', orgId).execute();
}

/** A new signing secret, the one before it kept as the previous secret until `until`. */
export async function setEndpointSecret(
  db: Kysely<DB>,
  id: string,
  secrets: { secret: string; previous: string; until: number },
): Promise<void> {
  await db
    .updateTable('event_endpoints')
    .set({ secret: secrets.secret, previous_secret: secrets.previous, previous_secret_until: secrets.until })
    .where('id', '=', id)
    .execute();
}

/** Enabled again, with no run of failures. */
export async function setEndpointEnabled(db: Kysely<DB>, id: string): Promise<void> {
  await db
    .updateTable('event_endpoints')
    .set({ disabled_at: null, disabled_reason: null, failing_since: null })
    .where('id', '=', id)
    .execute();
}

/** The organization of an endpoint, whichever it is. */
export async function findEndpointOrg(db: Kysely<DB>, endpointId: string): Promise<{ org_id: string } | undefined> {
  return db.selectFrom('event_endpoints').select('org_id').where('id', '=', endpointId).executeTakeFirst();
}

/** A delivery succeeded: the endpoint's run of failures, if any, is over. */
export async function clearEndpointFailing(db: Kysely<DB>, endpointId: string): Promise<void> {
  await db.updateTable('event_endpoints').set({ failing_since: null }).where('id', '=', endpointId).execute();
}

/**
 * A delivery failed: the endpoint's run of failures starts now unless one is going on. Resolves
 * with its start (undefined when the endpoint is gone).
 */
export async function markEndpointFailing(
  db: Kysely<DB>,
  endpointId: string,
  now: number,
): Promise<{ failing_since: number | null } | undefined> {
  return db
    .updateTable('event_endpoints')
    .set((eb) => ({ failing_since: eb.fn.coalesce('failing_since', eb.val(now)) }))
    .where('id', '=', endpointId)
    .returning('failing_since')
    .executeTakeFirst();
}

/** Disables an endpoint not disabled yet. */
export async function disableEndpointRow(
  db: Kysely<DB>,
  endpointId: string,
  at: number,
  reason: string,
): Promise<void> {
  await db
    .updateTable('event_endpoints')
    .set({ disabled_at: at, disabled_reason: reason })
    .where('id', '=', endpointId)
    .where('disabled_at', 'is', null)
    .execute();
}
