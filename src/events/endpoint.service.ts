import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { inTransaction, recordAudit } from '../audit/audit.service.js';
import type { DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { clip } from '../shared/clip.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { endpointAddressProblem } from './address-guard.js';
import {
  deleteDeliveriesOfEndpoint,
  findDeliveryOrg,
  findDeliveryRow,
  listDeliveryRows,
  listDeliveryRowsOfEvent,
  setDeliveryPending,
} from './delivery.repository.js';
import {
  deleteEndpointRow,
  disableEndpointRow,
  findAgentIdInOrg,
  findEndpointOrg,
  findEndpointRow,
  insertEndpoint,
  listEndpointRows,
  setEndpointEnabled,
  setEndpointSecret,
} from './endpoint.repository.js';
import { EVENT_DELIVERY_QUEUE, EVENT_TYPES, type EventDeliveryJob, isEventType } from './event.service.js';
import type { EventDeliveryStatus, EventDeliveryTable, EventEndpointTable } from './event.tables.js';

/** How long the secret before a rotation keeps signing, so receivers can switch without a gap. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export interface EventEndpoint {
  readonly id: string;
  readonly orgId: string;
  readonly url: string;
  readonly agentId: string | null;
  readonly events: readonly string[];
  readonly disabledAt: number | null;
  readonly disabledReason: string | null;
  readonly createdAt: number;
}

export interface EventDelivery {
  readonly id: string;
  readonly endpointId: string;
  readonly eventId: string;
  readonly type: string;
  readonly status: EventDeliveryStatus;
  readonly attempts: number;
  readonly lastStatusCode: number | null;
  readonly lastError: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly deliveredAt: number | null;
}

const invalid = (message: string) => new AppError('INVALID_BODY', message);

export const toEndpoint = (row: EventEndpointTable): EventEndpoint => ({
  id: row.id,
  orgId: row.org_id,
  url: row.url,
  agentId: row.agent_id,
  events: row.events === '*' ? ['*'] : row.events.split(','),
  disabledAt: row.disabled_at === null ? null : Number(row.disabled_at),
  disabledReason: row.disabled_reason,
  createdAt: Number(row.created_at),
});

export const toDelivery = (row: EventDeliveryTable): EventDelivery => ({
  id: row.id,
  endpointId: row.endpoint_id,
  eventId: row.event_id,
  type: row.event_type,
  status: row.status,
  attempts: Number(row.attempts),
  lastStatusCode: row.last_status_code === null ? null : Number(row.last_status_code),
  lastError: row.last_error,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
  deliveredAt: row.delivered_at === null ? null : Number(row.delivered_at),
});

/** A new signing secret: `whsec_` and 32 random bytes in base64, as Standard Webhooks libraries expect. */
export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * The URL as stored, or the 400 of an address refused at creation (the one rule:
 * `endpointAddressProblem`); where a name points is checked at each delivery.
 */
export function checkEndpointUrl(raw: string, options: { readonly allowPrivate: boolean }): string {
  const problem = endpointAddressProblem(raw, options);
  if (problem?.refusedAt === 'create') throw invalid(problem.message);
  return new URL(raw).toString();
}

/** `a,b` or `*` (all); every name must be an event type. */
export function parseEvents(raw: string | undefined): string {
  if (raw === undefined || raw.trim() === '' || raw.trim() === '*') return '*';
  const names = [...new Set(raw.split(',').map((e) => e.trim()))];
  const unknown = names.filter((e) => !isEventType(e));
  if (unknown.length > 0 || names.length === 0) {
    throw invalid(
      `Unknown event type ${unknown.map((e) => `'${clip(e, 40)}'`).join(', ')}; known: ${EVENT_TYPES.join(', ')}.`,
    );
  }
  return names.join(',');
}

/** What creating an endpoint or rotating its secret uses: an AppContext, or what the CLI builds. */
export interface EndpointDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  /** Seals signing secrets at rest (the region's secret box). */
  readonly messaging: { readonly secrets: { seal(plain: string): string } };
  readonly config: { readonly events: { readonly allowPrivate: boolean } };
}

export async function createEndpoint(
  deps: EndpointDeps,
  input: { orgId: string; url: string; agentId?: string; events?: string; actor?: string },
): Promise<EventEndpoint & { secret: string }> {
  const { db } = deps;
  const url = checkEndpointUrl(input.url, deps.config.events);
  const events = parseEvents(input.events);
  if (input.agentId !== undefined) {
    const agent = await findAgentIdInOrg(db, input.orgId, input.agentId);
    if (!agent) throw new AppError('NOT_FOUND', `No agent '${clip(input.agentId, 64)}' in this organization.`);
  }
  const secret = newSecret();
  const row: EventEndpointTable = {
    id: newId('ep'),
    org_id: input.orgId,
    agent_id: input.agentId ?? null,
    url,
    events,
    secret: deps.messaging.secrets.seal(secret),
    previous_secret: null,
    previous_secret_until: null,
    disabled_at: null,
    disabled_reason: null,
    failing_since: null,
    created_at: deps.clock.now(),
  };
  const actor = input.actor;
  await inTransaction(db, async (trx) => {
    await insertEndpoint(trx, row);
    if (actor) {
      await recordAudit(trx, {
        orgId: input.orgId,
        actor,
        action: 'endpoint.created',
        targetType: 'endpoint',
        targetId: row.id,
        details: { url, agentId: row.agent_id, events },
        at: row.created_at,
      });
    }
  });
  return { ...toEndpoint(row), secret };
}

export async function listEndpoints(db: Kysely<DB>, orgId: string): Promise<EventEndpoint[]> {
  const rows = await listEndpointRows(db, orgId);
  return rows.map(toEndpoint);
}

async function endpointOf(db: Kysely<DB>, orgId: string, id: string): Promise<EventEndpointTable> {
  const row = await findEndpointRow(db, orgId, id);
  if (!row) throw new AppError('NOT_FOUND', `No endpoint '${clip(id, 64)}' in this organization.`);
  return row;
}

/** Deletes the endpoint and its deliveries; queued deliveries find it gone and stop. */
export async function deleteEndpoint(
  db: Kysely<DB>,
  orgId: string,
  id: string,
  audit?: { actor: string; clock: Clock },
): Promise<void> {
  const endpoint = await endpointOf(db, orgId, id);
  await inTransaction(db, async (trx) => {
    await deleteDeliveriesOfEndpoint(trx, id);
    await deleteEndpointRow(trx, orgId, id);
    if (audit) {
      await recordAudit(trx, {
        orgId,
        actor: audit.actor,
        action: 'endpoint.deleted',
        targetType: 'endpoint',
        targetId: id,
        details: { url: endpoint.url },
        at: audit.clock.now(),
      });
    }
  });
}

/** A new secret; the old one keeps signing for 24 hours beside it. Re-enables nothing. */
export async function rotateEndpointSecret(
  deps: Omit<EndpointDeps, 'config'>,
  orgId: string,
  id: string,
): Promise<{ id: string; secret: string; previousSecretValidUntil: number }> {
  const { db } = deps;
  const row = await endpointOf(db, orgId, id);
  const secret = newSecret();
  const until = deps.clock.now() + ROTATION_OVERLAP_MS;
  // The current secret moves as it is stored (sealed): it is never opened here.
  await setEndpointSecret(db, id, { secret: deps.messaging.secrets.seal(secret), previous: row.secret, until });
  return { id, secret, previousSecretValidUntil: until };
}

/** Turns a disabled endpoint back on (its failed deliveries stay failed until replayed). */
export async function enableEndpoint(
  db: Kysely<DB>,
  orgId: string,
  id: string,
  audit?: { actor: string; clock: Clock },
): Promise<EventEndpoint> {
  const endpoint = await endpointOf(db, orgId, id);
  await inTransaction(db, async (trx) => {
    await setEndpointEnabled(trx, id);
    if (audit) await auditEndpoint(trx, orgId, audit, 'endpoint.enabled', endpoint);
  });
  return toEndpoint(await endpointOf(db, orgId, id));
}

/** Turns an endpoint off by hand: it receives nothing until enabled; deliveries already queued fail. */
export async function disableEndpoint(
  db: Kysely<DB>,
  orgId: string,
  id: string,
  audit: { actor: string; clock: Clock },
): Promise<EventEndpoint> {
  const endpoint = await endpointOf(db, orgId, id);
  await inTransaction(db, async (trx) => {
    await disableEndpointRow(trx, id, audit.clock.now(), `disabled by ${clip(audit.actor, 254)}`);
    await auditEndpoint(trx, orgId, audit, 'endpoint.disabled', endpoint);
  });
  return toEndpoint(await endpointOf(db, orgId, id));
}

/** One endpoint of the organization, or a 404 sentence. */
export async function getEndpoint(db: Kysely<DB>, orgId: string, id: string): Promise<EventEndpoint> {
  return toEndpoint(await endpointOf(db, orgId, id));
}

function auditEndpoint(
  trx: Kysely<DB>,
  orgId: string,
  audit: { actor: string; clock: Clock },
  action: string,
  endpoint: Pick<EventEndpointTable, 'id' | 'url'>,
  details: Record<string, unknown> = {},
): Promise<void> {
  return recordAudit(trx, {
    orgId,
    actor: audit.actor,
    action,
    targetType: 'endpoint',
    targetId: endpoint.id,
    details: { url: endpoint.url, ...details },
    at: audit.clock.now(),
  });
}

export async function listDeliveries(
  db: Kysely<DB>,
  orgId: string,
  endpointId: string,
  options: { failed?: boolean; limit?: number } = {},
): Promise<EventDelivery[]> {
  await endpointOf(db, orgId, endpointId);
  const rows = await listDeliveryRows(db, endpointId, {
    ...(options.failed !== undefined ? { failed: options.failed } : {}),
    limit: options.limit ?? 100,
  });
  return rows.map(toDelivery);
}

/** One delivery of the organization, or a 404 sentence. */
export async function getDelivery(db: Kysely<DB>, orgId: string, deliveryId: string): Promise<EventDelivery> {
  const row = await findDeliveryRow(db, orgId, deliveryId);
  if (!row) throw new AppError('NOT_FOUND', `No delivery '${clip(deliveryId, 64)}' in this organization.`);
  return toDelivery(row);
}

/** What became of one event at each endpoint that wanted it (e.g. a `message.received` at the agent's hook). */
export async function deliveriesOfEvent(
  db: Kysely<DB>,
  orgId: string,
  eventId: string,
): Promise<(EventDelivery & { url: string })[]> {
  const rows = await listDeliveryRowsOfEvent(db, orgId, eventId);
  return rows.map((row) => ({ ...toDelivery(row), url: row.url }));
}

/** Sends a delivery again from its first attempt (same event ID); re-enables nothing. */
export async function replayDelivery(
  db: Kysely<DB>,
  jobs: JobRunner,
  clock: Clock,
  orgId: string,
  deliveryId: string,
  actor?: string,
): Promise<EventDelivery> {
  const row = await findDeliveryRow(db, orgId, deliveryId);
  if (!row) throw new AppError('NOT_FOUND', `No delivery '${clip(deliveryId, 64)}' in this organization.`);
  if (row.status === 'pending') throw new AppError('INVALID_BODY', `Delivery '${deliveryId}' is still pending.`);
  const endpoint = actor ? await endpointOf(db, orgId, row.endpoint_id) : undefined;
  await db.transaction().execute(async (trx) => {
    await setDeliveryPending(trx, deliveryId, clock.now());
    await jobs.enqueue<EventDeliveryJob>(EVENT_DELIVERY_QUEUE, { deliveryId }, { db: trx });
    if (actor && endpoint) {
      await auditEndpoint(trx, orgId, { actor, clock }, 'endpoint.delivery_resent', endpoint, {
        deliveryId,
        eventId: row.event_id,
      });
    }
  });
  return toDelivery({ ...row, status: 'pending' });
}

/** The organization of an endpoint or of a delivery, for commands that name only its ID. */
export async function orgOf(db: Kysely<DB>, what: { endpointId?: string; deliveryId?: string }): Promise<string> {
  const row =
    what.endpointId !== undefined
      ? await findEndpointOrg(db, what.endpointId)
      : await findDeliveryOrg(db, what.deliveryId ?? '');
  if (!row) {
    throw new AppError(
      'NOT_FOUND',
      what.endpointId !== undefined
        ? `No endpoint '${clip(what.endpointId, 64)}'.`
        : `No delivery '${clip(what.deliveryId ?? '', 64)}'.`,
    );
  }
  return row.org_id;
}
