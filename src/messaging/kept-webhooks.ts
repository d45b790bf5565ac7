import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import {
  type DeadJob,
  deleteDeadJob,
  findDeadJobs,
  insertDeadJob,
  updateDeadJob,
} from '../jobs/dead-letter.repository.js';
import { inboundMessageStored } from './inbound-message.repository.js';
import {
  type Applied,
  applyBody,
  type BodyDeps,
  PROVIDER_WEBHOOK_QUEUE,
  type ProviderWebhookJob,
} from './provider-webhook.task.js';
import {
  deleteUnrouted,
  insertUnrouted,
  listUnrouted,
  unroutedContaining,
  updateUnrouted,
} from './unrouted-webhook.repository.js';
import { tasksOfBody } from './webhook-payload.js';

/**
 * The provider webhook bodies kept out of the queue, for an operator (`parley webhooks failed`,
 * `parley webhooks retry`): `failed` ones are the job runner's dead letters of the
 * `provider-webhook` queue (the same rows `parley jobs dead` lists), `unrouted` ones the unrouted
 * store's.
 */

/** What became of one body: applied, or kept out of the queue. */
export type BodyOutcome = 'applied' | 'failed' | 'unrouted';

export interface StoredWebhook {
  readonly id: string;
  readonly state: 'failed' | 'unrouted';
  readonly receivedAt: number;
  readonly failedAt: number | null;
  readonly attempts: number;
  readonly error: string | null;
  /** The phone number IDs no number had, for an unrouted body. */
  readonly phoneNumberIds: string[];
  /** Messages and statuses in the body. */
  readonly items: number;
}

/** A kept body, from either store. */
interface Kept {
  readonly id: string;
  readonly state: 'failed' | 'unrouted';
  readonly body: string;
  readonly receivedAt: number;
  readonly keptAt: number;
  readonly attempts: number;
  readonly error: string | null;
  readonly phoneNumberIds: string[];
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 1000);

function fromDeadJob(job: DeadJob): Kept {
  const payload = (typeof job.payload === 'object' && job.payload !== null ? job.payload : {}) as Partial<
    Record<keyof ProviderWebhookJob, unknown>
  >;
  return {
    id: job.id,
    state: 'failed',
    body: typeof payload.raw === 'string' ? payload.raw : '',
    receivedAt: Number(payload.receivedAt ?? job.failedAt),
    keptAt: job.failedAt,
    attempts: job.attempts,
    error: job.error,
    phoneNumberIds: [],
  };
}

const byReceipt = (a: Kept, b: Kept) => a.receivedAt - b.receivedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

async function keptBodies(db: Kysely<DB>, filter: { id?: string; phoneNumberId?: string }): Promise<Kept[]> {
  const unrouted = (await listUnrouted(db, filter)).map((u): Kept => ({ ...u, state: 'unrouted', error: u.error }));
  // A number added replays the bodies naming it: unrouted ones only.
  const failed =
    filter.phoneNumberId === undefined
      ? (await findDeadJobs(db, PROVIDER_WEBHOOK_QUEUE, filter.id !== undefined ? { id: filter.id } : {})).map(
          fromDeadJob,
        )
      : [];
  return [...failed, ...unrouted].sort(byReceipt);
}

/** The bodies kept out of the queue (failed or unrouted), oldest first. */
export async function listKeptWebhooks(db: Kysely<DB>): Promise<StoredWebhook[]> {
  return (await keptBodies(db, {})).map((k) => ({
    id: k.id,
    state: k.state,
    receivedAt: k.receivedAt,
    failedAt: k.keptAt,
    attempts: k.attempts,
    error: k.error,
    phoneNumberIds: k.phoneNumberIds,
    items: tasksOfBody(k.body, k.receivedAt).length,
  }));
}

/**
 * Applies kept bodies again, in this process: every failed and unrouted one, or the one with `id`,
 * or the unrouted ones naming `phoneNumberId` (a number was just added). A body is tried
 * `retryDelaysMs.length + 1` times, then kept again (in the store its outcome calls for); resolves
 * with what became of each.
 */
export async function replayKeptWebhooks(
  deps: BodyDeps,
  retryDelaysMs: readonly number[],
  filter: { id?: string; phoneNumberId?: string } = {},
): Promise<{ id: string; outcome: BodyOutcome }[]> {
  const results: { id: string; outcome: BodyOutcome }[] = [];
  for (const kept of await keptBodies(deps.db, filter)) {
    const tasks = tasksOfBody(kept.body, kept.receivedAt);
    let result: Applied = { unrouted: new Set(), error: undefined, failed: false };
    let attempt = 0;
    for (;;) {
      attempt++;
      const last = attempt > retryDelaysMs.length;
      result = await applyBody(deps, tasks, true, !last);
      if (!result.failed || last) break;
      await new Promise((r) => setTimeout(r, retryDelaysMs[attempt - 1]));
    }
    const outcome: BodyOutcome = result.failed ? 'failed' : result.unrouted.size > 0 ? 'unrouted' : 'applied';
    await keepAs(deps, kept, outcome, { attempts: kept.attempts + attempt, result });
    results.push({ id: kept.id, outcome });
  }
  return results;
}

/** Records what became of a replayed body: gone when applied, else in the store its outcome calls for. */
async function keepAs(
  deps: BodyDeps,
  kept: Kept,
  outcome: BodyOutcome,
  run: { attempts: number; result: Applied },
): Promise<void> {
  const at = deps.clock.now();
  const { attempts, result } = run;
  await deps.db.transaction().execute(async (trx) => {
    if (outcome === 'applied' || outcome !== kept.state) {
      if (kept.state === 'failed') await deleteDeadJob(trx, kept.id);
      else await deleteUnrouted(trx, kept.id);
    }
    if (outcome === 'failed') {
      const error = errorText(result.error);
      if (kept.state === 'failed') await updateDeadJob(trx, kept.id, { attempts, error, at });
      else {
        const payload: ProviderWebhookJob = { raw: kept.body, receivedAt: kept.receivedAt };
        await insertDeadJob(trx, { id: kept.id, queue: PROVIDER_WEBHOOK_QUEUE, payload, attempts, error, at });
      }
    } else if (outcome === 'unrouted') {
      if (kept.state === 'unrouted')
        await updateUnrouted(trx, kept.id, { attempts, at, phoneNumberIds: result.unrouted });
      else {
        await insertUnrouted(trx, {
          id: kept.id,
          body: kept.body,
          receivedAt: kept.receivedAt,
          attempts,
          at,
          phoneNumberIds: result.unrouted,
        });
      }
    }
  });
}

/**
 * What became of the inbound message `providerMessageId`, as the database tells (for a process
 * that did not apply it, such as `parley sandbox inbound`): applied (stored, its window open), kept
 * as a failed or an unrouted webhook, or undefined while neither.
 */
export async function inboundOutcomeOf(
  db: Kysely<DB>,
  providerMessageId: string,
): Promise<'applied' | 'failed' | 'unrouted' | undefined> {
  if (await inboundMessageStored(db, providerMessageId)) return 'applied';
  const holds = (body: string, receivedAt: number) =>
    tasksOfBody(body, receivedAt).some((t) => t.kind === 'inbound' && t.providerMessageId === providerMessageId);
  for (const u of await unroutedContaining(db, providerMessageId)) if (holds(u.body, u.receivedAt)) return 'unrouted';
  for (const job of await findDeadJobs(db, PROVIDER_WEBHOOK_QUEUE, { containing: providerMessageId })) {
    const kept = fromDeadJob(job);
    if (holds(kept.body, kept.receivedAt)) return 'failed';
  }
  return undefined;
}
