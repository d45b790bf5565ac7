import { createHash, randomUUID } from 'node:crypto';
import { CompiledQuery, type Kysely } from 'kysely';
import type PgBoss from 'pg-boss';
import type { Logger } from 'pino';
import { withStartupLock } from '../db/database.js';
import { PerTurn } from '../db/per-turn.js';
import type { DB } from '../db/schema.js';
import type { ClaimedJob, JobStore } from './job-store.js';

/** What a pg-boss job's data holds: the payload and the attempt it is at. */
interface Envelope {
  readonly p: unknown;
  readonly a: number;
}

/**
 * pg-boss runs its SQL through Parley's own pool (or a caller's transaction). Its locked commands
 * are one text holding `BEGIN; ...; COMMIT;`: one that fails part-way would leave its connection
 * inside an aborted transaction, so those run on a connection of their own that is rolled back on
 * failure before it goes back to the pool.
 */
function executorOf(db: Kysely<DB>): PgBoss.Db {
  return {
    async executeSql(text: string, values: unknown[] = []) {
      if (!/^\s*BEGIN\b/i.test(text)) {
        const result = await db.executeQuery(CompiledQuery.raw(text, values));
        return { rows: result.rows as unknown[] };
      }
      return db.connection().execute(async (conn) => {
        try {
          const result = await conn.executeQuery(CompiledQuery.raw(text, values));
          return { rows: result.rows as unknown[] };
        } catch (err) {
          await conn.executeQuery(CompiledQuery.raw('ROLLBACK', [])).catch(() => undefined);
          throw err;
        }
      });
    },
  };
}

/** A UUID of its own for each queue and key (a scheduled job's interval), the same on every node. */
function uuidOf(queue: string, key: string): string {
  const hex = createHash('sha256').update(`${queue}\u0000${key}`).digest('hex');
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

export interface PgBossStoreOptions {
  readonly db: Kysely<DB>;
  /** The region's schema; pg-boss's tables live in it beside Parley's. */
  readonly schema: string;
  readonly leaseMs: number;
  readonly logger: Logger;
}

/**
 * Jobs in pg-boss, shared by every node of a region. pg-boss claims with `FOR UPDATE SKIP LOCKED`
 * (a job runs on one node at a time) and fails over an active job whose `expire_in` has passed
 * since `started_on`; the runner renews `started_on` while a handler runs (a lease), and runs
 * pg-boss's expiry every third of a lease on each node, so a job of a dead node runs again within
 * seconds. Retries follow the runner's schedule: a failed job goes back to `retry` with its own
 * `start_after`, keeping its ID.
 */
export async function createPgBossStore(options: PgBossStoreOptions): Promise<JobStore> {
  const { default: PgBossClass } = await import('pg-boss');
  const { db, schema, leaseMs, logger } = options;
  const executor = executorOf(db);
  const expireInSeconds = Math.max(1, Math.ceil(leaseMs / 1000));
  const boss = new PgBossClass({
    db: executor,
    schema,
    migrate: true,
    schedule: false,
    supervise: true,
    // Archiving and deleting of finished jobs; expiry runs more often below.
    maintenanceIntervalSeconds: 60,
    archiveCompletedAfterSeconds: 3600,
    archiveFailedAfterSeconds: 3600,
    deleteAfterDays: 1,
  });
  boss.on('error', (err: unknown) => logger.warn({ err }, 'job store maintenance failed; it runs again shortly'));
  const table = `${quote(schema)}.job`;
  let expiry: NodeJS.Timeout | undefined;
  let started = false;
  // Jobs stored outside a transaction in one turn of the event loop (the provider webhooks of many
  // requests under load, say) go to PostgreSQL as one INSERT; each caller's promise settles once
  // the job is committed, so a caller still acknowledges only what is durable.
  type Insert = PgBoss.JobInsert & { id: string; name: string };
  const inserts = new PerTurn<Insert, string>(
    async (job) => {
      await boss.insert([job]);
      return job.id;
    },
    async (jobs) => {
      await boss.insert([...jobs]);
      return jobs.map((j) => j.id);
    },
  );

  return {
    kind: 'pg-boss',
    async init(queues) {
      // Nodes starting at once: one installs or migrates pg-boss's tables, the others wait and find
      // them there (pg-boss's own lock would let them fail on objects made meanwhile); under the
      // same lock as Parley's own migrations, so neither deadlocks the other in the catalog.
      await withStartupLock(db, async () => {
        await boss.start();
        started = true;
        for (const name of queues) {
          if (await boss.getQueue(name)) continue;
          // Crashes (lapsed leases) are retried up to 20 times in a row; handler failures follow the runner's schedule.
          await boss.createQueue(name, { name, policy: 'standard', retryLimit: 20, retryDelay: 0, expireInSeconds });
        }
      });
      expiry = setInterval(
        () => {
          boss.expire().catch((err: unknown) => logger.warn({ err }, 'could not expire lapsed job leases'));
        },
        Math.max(1000, Math.floor(leaseMs / 3)),
      );
      expiry.unref();
    },
    async insert(queue, payload, attempt, runAt, trx) {
      const data: Envelope = { p: payload, a: attempt };
      if (!trx) return inserts.add({ id: randomUUID(), name: queue, data, startAfter: new Date(runAt) });
      const id = await boss.send(queue, data as object, { startAfter: new Date(runAt), db: executorOf(trx) });
      if (!id) throw new Error(`job store refused a job of queue "${queue}"`);
      return id;
    },
    async insertOnce(queue, key, payload) {
      // pg-boss stores a job whose ID is taken as nothing (ON CONFLICT DO NOTHING) and answers no ID;
      // a done job keeps its ID until it is archived, an hour later.
      const data: Envelope = { p: payload, a: 1 };
      const id = await boss.send(queue, data as object, { id: uuidOf(queue, key) });
      return id !== null;
    },
    async insertMany(queue, payloads, trx) {
      const jobs = payloads.map((p) => ({ id: randomUUID(), name: queue, data: { p, a: 1 } satisfies Envelope }));
      if (trx) await boss.insert(jobs, { db: executorOf(trx) });
      else await Promise.all(jobs.map((job) => inserts.add(job)));
      return jobs.map((j) => j.id);
    },
    async claim(queue, limit) {
      const jobs = await boss.fetch<Envelope>(queue, { batchSize: limit });
      return (jobs ?? []).map(
        (j): ClaimedJob => ({ id: j.id, queue, payload: j.data?.p, attempt: Number(j.data?.a ?? 1) }),
      );
    },
    async extend(queue, ids) {
      await executor.executeSql(
        `update ${table} set started_on = now() where name = $1 and id = any($2::uuid[]) and state = 'active'`,
        [queue, [...ids]],
      );
    },
    async complete(job, trx) {
      await boss.complete(job.queue, job.id, {}, trx ? { db: executorOf(trx) } : {});
    },
    async completeMany(queue, jobs, trx) {
      if (jobs.length === 0) return;
      const ids = jobs.map((j) => j.id);
      if (!trx) {
        await boss.complete(queue, ids);
        return;
      }
      // pg-boss takes (name, id or ids, data, options) for both forms; its types omit `data` for ids.
      await (
        boss.complete as (name: string, ids: string[], data: object, options: PgBoss.ConnectionOptions) => Promise<void>
      ).call(boss, queue, ids, {}, { db: executorOf(trx) });
    },
    async reschedule(job, attempt, runAt, error) {
      // Back to waiting with the runner's delay; started_on and retry_count are cleared so that a
      // later lapse of a lease counts from zero.
      await executor.executeSql(
        `update ${table}
            set state = 'retry', start_after = $3, started_on = null, retry_count = 0,
                data = jsonb_set(data, '{a}', to_jsonb($4::int)), output = jsonb_build_object('message', $5::text)
          where name = $1 and id = $2 and state = 'active'`,
        [job.queue, job.id, new Date(runAt), attempt, error],
      );
    },
    async counts() {
      const { rows } = await executor.executeSql(
        `select name, count(*) filter (where state in ('created', 'retry')) as queued,
                count(*) filter (where state = 'active') as running
           from ${table} where state < 'completed' group by name`,
        [],
      );
      return (rows as { name: string; queued: string | number; running: string | number }[]).map((r) => ({
        queue: r.name,
        queued: Number(r.queued),
        running: Number(r.running),
      }));
    },
    async close() {
      if (expiry) clearInterval(expiry);
      if (started) await boss.stop({ graceful: false, close: false, wait: true });
    },
  };
}
