import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { EventDelivery, EventEndpoint } from './endpoint.service.js';
import { listEndpoints } from './endpoint.service.js';
import { failureCountRows, type LatestAttemptRow, latestAttemptRows } from './hook-health.repository.js';

const HOUR_MS = 60 * 60 * 1000;

/**
 * What a hook's deliveries came to: `none` (nothing attempted yet), `healthy` (the latest attempt
 * was delivered), `failing` (the latest attempt failed), `disabled` (receives nothing).
 */
export type HookState = 'none' | 'healthy' | 'failing' | 'disabled';

export interface HookHealth {
  readonly endpoint: EventEndpoint;
  readonly state: HookState;
  /** When the latest attempt ended, and what it came to in words. */
  readonly lastAt: number | null;
  readonly lastOutcome: string | null;
  /** Deliveries whose last attempt, within the past hour, failed. */
  readonly failuresLastHour: number;
}

/** A delivery's state in words: delivered, failing (with the answer) and retried, pending, or dead. */
export function deliveryOutcome(d: Pick<EventDelivery, 'status' | 'attempts' | 'lastStatusCode' | 'lastError'>): {
  word: 'Delivered' | 'Pending' | 'Failing, will retry' | 'Dead';
  detail: string;
} {
  const code = d.lastStatusCode === null ? '' : `HTTP ${d.lastStatusCode}`;
  if (d.status === 'delivered') return { word: 'Delivered', detail: code };
  if (d.status === 'failed') return { word: 'Dead', detail: code || (d.lastError ?? '') };
  if (d.attempts > 0 && d.lastError !== null) return { word: 'Failing, will retry', detail: code || d.lastError };
  return { word: 'Pending', detail: '' };
}

function healthOf(endpoint: EventEndpoint, latest: LatestAttemptRow | undefined, failures: number): HookHealth {
  const last = latest
    ? deliveryOutcome({
        status: latest.status,
        attempts: 1,
        lastStatusCode: latest.last_status_code === null ? null : Number(latest.last_status_code),
        lastError: latest.last_error,
      })
    : undefined;
  const state: HookState =
    endpoint.disabledAt !== null
      ? 'disabled'
      : last === undefined || last.word === 'Pending'
        ? 'none'
        : last.word === 'Delivered'
          ? 'healthy'
          : 'failing';
  return {
    endpoint,
    state,
    lastAt: latest ? Number(latest.updated_at) : null,
    lastOutcome: last ? [last.word, last.detail].filter(Boolean).join(': ') : null,
    failuresLastHour: failures,
  };
}

/**
 * The health of every endpoint of the organization, in three statements whatever their number
 * (served by the index on deliveries' endpoint and update time).
 */
export async function hookHealthOfOrg(db: Kysely<DB>, orgId: string, now: number): Promise<HookHealth[]> {
  const endpoints = await listEndpoints(db, orgId);
  if (endpoints.length === 0) return [];
  const ids = endpoints.map((e) => e.id);
  const [latest, failures] = await Promise.all([
    latestAttemptRows(db, orgId, ids),
    failureCountRows(db, orgId, ids, now - HOUR_MS),
  ]);
  const latestBy = new Map<string, LatestAttemptRow>();
  for (const row of latest) if (!latestBy.has(row.endpoint_id)) latestBy.set(row.endpoint_id, row);
  const failuresBy = new Map(failures.map((f) => [f.endpoint_id, Number(f.n)]));
  return endpoints.map((e) => healthOf(e, latestBy.get(e.id), failuresBy.get(e.id) ?? 0));
}

/** The health of each agent's hooks (endpoints bound to the agent), by agent ID. */
export async function hookHealthByAgent(
  db: Kysely<DB>,
  orgId: string,
  now: number,
): Promise<Map<string, HookHealth[]>> {
  const byAgent = new Map<string, HookHealth[]>();
  for (const health of await hookHealthOfOrg(db, orgId, now)) {
    const agentId = health.endpoint.agentId;
    if (agentId === null) continue;
    byAgent.set(agentId, [...(byAgent.get(agentId) ?? []), health]);
  }
  return byAgent;
}
