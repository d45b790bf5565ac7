/**
 * What the fault drills (faults.test.ts) share: a careful client that sends until it has a final
 * answer, the provider's log of what it accepted, and the faults themselves (PostgreSQL backends
 * terminated, a Redis of the drill's own killed and started again).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import pg from 'pg';

/**
 * How big a drill is: small in CI (seconds), large by hand (scripts/fault-drills.sh). CI runs the
 * PostgreSQL and full-disk drills; the Redis drill (CI covers Redis lost and restarted in
 * test/rate-limit/redis.test.ts) and the campaign drill (test/campaigns/kill.test.ts) only run by hand.
 */
export const DRILL = {
  /** All four drills (the script sets it), not only those CI runs. */
  all: process.env.FAULT_DRILLS === 'all',
  /** Sends of the PostgreSQL, Redis and full-disk drills. */
  sends: Number(process.env.FAULT_DRILL_SENDS) || 40,
  /** Recipients of the campaign a node is killed in (under the sandbox log's 1,000 per number). */
  campaign: Number(process.env.FAULT_DRILL_CAMPAIGN) || 300,
  /** Sends at once. */
  concurrency: Number(process.env.FAULT_DRILL_CONCURRENCY) || 8,
  /** How long the disk stays full once the node has refused a write. */
  fullForMs: Number(process.env.FAULT_DRILL_FULL_FOR_MS) || 3_000,
  /**
   * How long the PostgreSQL drill terminates backends. The fault then passes, as real ones do: a
   * send that needs more time than the killer's pauses leave it would otherwise never get through.
   */
  killForMs: Number(process.env.FAULT_DRILL_KILL_FOR_MS) || 5_000,
  /** How long a send may take to get its final answer. */
  deadlineMs: Number(process.env.FAULT_DRILL_DEADLINE_MS) || 90_000,
};

export interface FinalAnswer {
  readonly to: string;
  readonly key: string;
  /** The final status, or undefined when none came before the deadline. */
  readonly status: number | undefined;
  readonly body: string;
  readonly tries: number;
  /** The answers that were tried again, by status (`network` for a lost connection). */
  readonly retried: Record<string, number>;
}

const RETRIED = new Set([409, 429, 503]);

/**
 * One send, as a careful client makes it: the same Idempotency-Key on every try; 409 (the first try
 * still in flight), 429, 503 and a lost connection are tried again after a pause (Retry-After, at
 * most 500 ms); any other answer is final.
 */
export async function sendUntilFinal(
  baseUrl: () => string,
  auth: Record<string, string>,
  to: string,
  key: string,
  deadline: number,
): Promise<FinalAnswer> {
  const retried: Record<string, number> = {};
  const body = JSON.stringify({
    channel: 'msgapp',
    to,
    type: 'template',
    template: { name: 'hello_world', language: 'en_US' },
  });
  let tries = 0;
  while (Date.now() < deadline) {
    tries++;
    let pause = 100;
    try {
      const res = await fetch(`${baseUrl()}/api/channels/send`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': key },
        body,
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      if (!RETRIED.has(res.status)) return { to, key, status: res.status, body: text, tries, retried };
      retried[res.status] = (retried[res.status] ?? 0) + 1;
      const after = Number(res.headers.get('retry-after'));
      if (after > 0) pause = Math.min(500, after * 1000);
    } catch {
      retried.network = (retried.network ?? 0) + 1;
    }
    await new Promise((r) => setTimeout(r, pause * (0.5 + Math.random())));
  }
  return { to, key, status: undefined, body: '', tries, retried };
}

/** Runs `work` on each item, `concurrency` at a time. */
export async function pooled<T, R>(items: readonly T[], concurrency: number, work: (item: T) => Promise<R>) {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await work(items[i] as T);
      }
    }),
  );
  return out;
}

/** Distinct valid US numbers (+1 650 2xx xxxx). */
export function recipients(count: number): string[] {
  const start = Math.floor(Math.random() * 900_000);
  return Array.from({ length: count }, (_, i) => `+16502${String(start + i).padStart(6, '0')}`);
}

/**
 * What the provider accepted for `to`, from its own log (`GET /api/sandbox/messages` on a node of
 * the drill: every node's built-in sandbox keeps it in the shared data folder's state file). The
 * log keeps each number's last 1,000 requests: drills stay under that.
 */
export async function acceptedFor(nodeUrl: string, auth: Record<string, string>, to: string): Promise<number> {
  const res = await fetch(`${nodeUrl}/api/sandbox/messages?to=${encodeURIComponent(to)}&limit=200`, {
    headers: auth,
  });
  if (res.status !== 200) throw new Error(`GET /api/sandbox/messages: ${res.status} ${await res.text()}`);
  const { data } = (await res.json()) as { data: { messageId: string | null; error: unknown }[] };
  return data.filter((item) => item.error === null && item.messageId !== null).length;
}

/** `url` with PostgreSQL's application_name set, so a drill can find its own backends. */
export function withApplicationName(url: string, name: string): string {
  const u = new URL(url);
  u.searchParams.set('application_name', name);
  return u.toString();
}

/**
 * Terminates backends of `applicationName` in `url`'s database, and only those (the PostgreSQL is
 * shared): each round, after a pause of 30 to 200 ms, every backend in the middle of a statement,
 * and every fifth round the idle ones too, for `forMs` (the fault passes) or until stopped; says how
 * many it terminated.
 */
export function startBackendKiller(url: string, applicationName: string, forMs: number) {
  const admin = new pg.Client({ connectionString: url });
  let running = true;
  let terminated = 0;
  let rounds = 0;
  const until = Date.now() + forMs;
  const done = (async () => {
    await admin.connect();
    while (running && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 30 + Math.random() * 170));
      rounds++;
      const all = rounds % 5 === 0;
      const { rows } = await admin.query(
        `select pg_terminate_backend(pid) as ok from pg_stat_activity
         where datname = current_database() and application_name = $1 and pid <> pg_backend_pid()
           and ($2 or state = 'active')`,
        [applicationName, all],
      );
      terminated += rows.filter((r: { ok: boolean }) => r.ok).length;
    }
    await admin.end();
  })();
  return {
    async stop(): Promise<number> {
      running = false;
      await done;
      return terminated;
    },
  };
}

/** A Redis of the drill's own on `port` (the machine's Redis is shared): killed and started at will. */
export function ownRedis(port: number) {
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--logfile', ''],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 10_000;
    while (!(await accepts(port))) {
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not start`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };
  return { url: `redis://127.0.0.1:${port}`, start, kill };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
