import type { ExpressionBuilder, Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { EventDeliveryStatus } from './event.tables.js';

/** SQL of hooks' health: what the latest attempts of an organization's endpoints came to. */

/** A delivery whose last attempt failed: failed for good, or pending another try after an error. */
const lastAttemptFailed = (eb: ExpressionBuilder<DB, 'event_deliveries'>) =>
  eb.or([
    eb('status', '=', 'failed'),
    eb.and([eb('status', '=', 'pending'), eb('attempts', '>', 0), eb('last_error', 'is not', null)]),
  ]);

export interface LatestAttemptRow {
  endpoint_id: string;
  status: EventDeliveryStatus;
  last_status_code: number | null;
  last_error: string | null;
  updated_at: number;
}

/** Per endpoint (of the organization, not empty), its delivery attempted most recently, in one statement. */
export async function latestAttemptRows(
  db: Kysely<DB>,
  orgId: string,
  endpointIds: readonly string[],
): Promise<LatestAttemptRow[]> {
  return db
    .selectFrom('event_deliveries as d')
    .select(['d.endpoint_id', 'd.status', 'd.last_status_code', 'd.last_error', 'd.updated_at'])
    .where('d.org_id', '=', orgId)
    .where('d.endpoint_id', 'in', [...endpointIds])
    .where('d.attempts', '>', 0)
    .where('d.updated_at', '=', (eb) =>
      eb
        .selectFrom('event_deliveries as m')
        .select((m) => m.fn.max('m.updated_at').as('latest'))
        .whereRef('m.endpoint_id', '=', 'd.endpoint_id')
        .where('m.attempts', '>', 0),
    )
    .orderBy('d.id', 'desc')
    .execute();
}

/** Per endpoint (of the organization, not empty), its deliveries whose last attempt, since `since`, failed. */
export async function failureCountRows(
  db: Kysely<DB>,
  orgId: string,
  endpointIds: readonly string[],
  since: number,
): Promise<{ endpoint_id: string; n: number | string | bigint }[]> {
  return db
    .selectFrom('event_deliveries')
    .select((eb) => ['endpoint_id', eb.fn.countAll<number | string | bigint>().as('n')])
    .where('org_id', '=', orgId)
    .where('endpoint_id', 'in', [...endpointIds])
    .where('updated_at', '>=', since)
    .where(lastAttemptFailed)
    .groupBy('endpoint_id')
    .execute();
}
