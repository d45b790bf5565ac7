/**
 * Audiences at scale, in-process on the database `parley serve` would open (a fresh SQLite folder,
 * or with DATABASE_URL a fresh PostgreSQL schema, dropped at the end):
 *
 * 1. a segment of `--members` end users (default 100,000 on PostgreSQL, 20,000 on SQLite; half of them tagged `vip` and on the pro
 *    plan: the segment is those) sent a campaign: the time to turn its members into deliveries, and
 *    the pace held (deliveries stored per second), by the send's own task (the job runner stubbed:
 *    the dispatch jobs it would queue are counted, not run);
 * 2. the plan PostgreSQL picks for `GET /api/endusers?attribute=plan:pro` over those end users;
 * 3. a campaign's stats and the organization's 30-day overview with `--deliveries` deliveries
 *    (default 200,000 on PostgreSQL, 2,000 on SQLite, where seeding more in one statement is slow, so that a run takes under a minute on a busy
 *    machine; `--deliveries 1000000` for the figure of bench/README.md) spread over 30 days: the rows are seeded
 *    in bulk with their counters as the triggers would have kept them (one aggregate; the triggers
 *    are off while seeding), then each read is timed `--reads` times (default 30): p50 and max.
 *
 *   node --import tsx bench/audiences.ts                     # SQLite, under a minute
 *   DATABASE_URL=postgres://... node --import tsx bench/audiences.ts
 *   DATABASE_URL=postgres://... node --import tsx bench/audiences.ts --members 1000000 --deliveries 10000000
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  campaignStats,
  createAgent,
  createCampaign,
  createOrganization,
  createSegment,
  dropPostgresSchema,
  loadConfig,
  migrateToLatest,
  openDatabase,
  orgOverview,
  SegmentSender,
  scheduleSegmentSend,
  sql,
  systemClock,
} from './internals.js';

const { values } = parseArgs({
  options: {
    members: { type: 'string' },
    deliveries: { type: 'string' },
    reads: { type: 'string', default: '30' },
  },
});
const PG_URL = process.env.DATABASE_URL;
const members = Number(values.members ?? (PG_URL ? 100_000 : 20_000));
const deliveries = Number(values.deliveries ?? (PG_URL ? 200_000 : 2_000));
const reads = Number(values.reads);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

// Some of Parley's timers are unref'd; this keeps the process up until the run ends.
const keepAlive = setInterval(() => {}, 1_000);
const dir = mkdtempSync(join(tmpdir(), 'parley-bench-audiences-'));
const schema = `bench_${randomBytes(4).toString('hex')}`;
const env: Record<string, string> = {
  PARLEY_DATA_DIR: dir,
  LOG_LEVEL: 'warn',
  ...(PG_URL
    ? {
        DATABASE_URL: PG_URL,
        PARLEY_PG_SCHEMA: schema,
        // The seeds of a million rows run longer than a request may.
        PARLEY_PG_STATEMENT_TIMEOUT_MS: '600000',
        PARLEY_SECRET_KEY: randomBytes(32).toString('base64'),
        PARLEY_WEBHOOK_APP_SECRET: randomBytes(24).toString('hex'),
      }
    : {}),
};
const config = loadConfig({}, env);
const region = config.regions[0];
if (!region) throw new Error('no region');
const database = await openDatabase(region.database, { poolSize: 2 });
const { db } = database;
const dialect = PG_URL ? 'PostgreSQL' : 'SQLite';

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const out = await fn();
  return [out, performance.now() - started];
}

try {
  await migrateToLatest(db);
  const org = await createOrganization(db, systemClock, { name: 'Bench', plan: 'paid', defaultCountry: 'US' });
  const agent = await createAgent(db, systemClock, { orgId: org.id, name: 'Bench agent' });
  const campaign = await createCampaign(db, systemClock, {
    orgId: org.id,
    name: 'Bench campaign',
    agentId: agent.id,
    template: 'hello_world',
    language: 'en_US',
  });

  const step = (what: string) => process.stderr.write(`${what}\n`);
  step('organization, agent and campaign made');
  // 1. The segment and its send.
  const now = Date.now();
  // Seeded in SQL, a row per number of a series: half tagged vip and on the pro plan.
  const series = (n: number) =>
    PG_URL
      ? sql`generate_series(0::bigint, ${sql.raw(String(n - 1))}::bigint) AS g(i)`
      : sql`(WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ${n - 1}) SELECT i FROM s) AS g`;
  const pad = (expr: string, width: number) =>
    PG_URL
      ? `lpad((${expr})::text, ${width}, '0')`
      : `substr('0000000000000000000000' || (${expr}), -${width}, ${width})`;
  const [, seedMs] = await timed(async () => {
    const id = sql.raw(`'eu_' || ${pad('i', 22)}`);
    await sql`INSERT INTO end_users (id, org_id, name, name_search, email, phone, tags, origin, channel_identifiers, consent, attributes, created_at, last_seen_at, updated_at)
      SELECT ${id}, ${org.id}, 'Member ' || i, 'member ' || i, NULL, '+1650' || ${sql.raw(pad('2000000 + i', 7))},
        CASE WHEN i % 2 = 0 THEN '["vip"]' ELSE '[]' END, 'imported', '{}', '{}',
        CASE WHEN i % 2 = 0 THEN '{"plan":"pro"}' ELSE '{"plan":"free"}' END, ${sql.raw(String(now - members))} + i, NULL, ${sql.raw(String(now))}
      FROM ${series(members)}`.execute(db);
    await sql`INSERT INTO end_user_tags (end_user_id, org_id, tag) SELECT ${id}, ${org.id}, 'vip' FROM ${series(members)} WHERE i % 2 = 0`.execute(
      db,
    );
    await sql`INSERT INTO end_user_attributes (end_user_id, org_id, name, value)
      SELECT ${id}, ${org.id}, 'plan', CASE WHEN i % 2 = 0 THEN 'pro' ELSE 'free' END FROM ${series(members)}`.execute(
      db,
    );
  });
  step(`${members} end users seeded`);
  if (PG_URL) await sql`ANALYZE`.execute(db);
  const segment = await createSegment(db, systemClock, org.id, {
    name: 'VIPs on pro',
    filter: { tags: { any: ['vip'] }, attributes: { plan: 'pro' } },
  });
  let dispatchJobs = 0;
  const jobs = {
    enqueue: async () => {
      dispatchJobs++;
      return 'job';
    },
  } as never;
  const send = await scheduleSegmentSend({ db, clock: systemClock, jobs }, org.id, campaign.id, {
    segment: segment.id,
  });
  step('segment saved, send scheduled');
  const [, sendMs] = await timed(() => new SegmentSender({ db, clock: systemClock, jobs }).run(send.id));
  const made = await db
    .selectFrom('campaign_deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('campaign_id', '=', campaign.id)
    .executeTakeFirstOrThrow();

  step('send done');
  // 2. The attribute filter's plan.
  let plan = '(PostgreSQL only)';
  if (PG_URL) {
    const rows = await sql<{ 'QUERY PLAN': string }>`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)
      SELECT * FROM end_users WHERE org_id = ${org.id} AND id IN (
        SELECT end_user_id FROM end_user_attributes WHERE org_id = ${org.id} AND name = 'plan'
          AND substr(value, 1, 200) = 'pro' AND value = 'pro')
      ORDER BY created_at DESC, id DESC LIMIT 51`.execute(db);
    plan = rows.rows.map((r) => r['QUERY PLAN']).join('\n');
  }

  // 3. A million deliveries (by default), their counters, and the reads.
  const statsCampaign = await createCampaign(db, systemClock, {
    orgId: org.id,
    name: 'Bench stats',
    agentId: agent.id,
    template: 'hello_world',
    language: 'en_US',
  });
  const perHour = new Map<number, number>();
  const [, deliverySeedMs] = await timed(async () => {
    // The counters are written below as the triggers would have kept them: the triggers are off meanwhile.
    if (PG_URL) await sql`ALTER TABLE campaign_deliveries DISABLE TRIGGER USER`.execute(db);
    else await sql`DROP TRIGGER IF EXISTS deliveries_stat_insert`.execute(db);
    // Spread over the last 30 days; every 20th failed.
    const at = sql.raw(`(${now} - ((i * 7919) % ${deliveries}) * ${30 * DAY} / ${deliveries})`);
    await sql`INSERT INTO campaign_deliveries (id, org_id, campaign_id, to_phone, parameters, end_user, dedupe_key, state,
        message_id, claimed_at, end_user_id, conversation_id, error, throttles, created_at, sent_at, updated_at)
      SELECT ${sql.raw(`'dlv_' || ${pad('i', 22)}`)}, ${org.id}, ${statsCampaign.id}, '+1650' || ${sql.raw(pad('2000000 + i % 9000000', 7))},
        NULL, NULL, NULL, CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'sending' END, NULL, NULL, NULL, NULL,
        CASE WHEN i % 20 = 0 THEN 'The provider rejected the message.' END, 0, ${at},
        CASE WHEN i % 20 = 0 THEN NULL ELSE ${at} END, ${at}
      FROM ${series(deliveries)}`.execute(db);
    const hours = await sql<{ hour: number; n: number }>`SELECT (created_at / ${HOUR}) * ${HOUR} AS hour, count(*) AS n
      FROM campaign_deliveries WHERE campaign_id = ${statsCampaign.id} GROUP BY 1`.execute(db);
    for (const r of hours.rows) perHour.set(Number(r.hour), Number(r.n));
    // The counters the triggers would have kept: per hour, spread over the 8 shards.
    const counters: Record<string, unknown>[] = [];
    const share: [string, number, string][] = [
      ['accepted', 1, ''],
      ['sent', 0.95, ''],
      ['delivered', 0.9, ''],
      ['read', 0.6, ''],
      ['replied', 0.1, ''],
      ['failed', 0.05, 'The provider rejected the message.'],
    ];
    for (const [hour, count] of perHour) {
      for (const [metric, part, reason] of share) {
        const total = Math.round(count * part);
        for (let shard = 0; shard < 8; shard++) {
          const n = Math.floor(total / 8) + (shard < total % 8 ? 1 : 0);
          counters.push({ key: statsCampaign.id, bucket: hour, metric, reason, shard, n });
          if (metric !== 'accepted' && metric !== 'replied') {
            counters.push({ key: org.id, bucket: hour, metric, reason, shard, n });
          }
        }
      }
      for (const metric of ['received', 'conversations', 'handoffs', 'optouts']) {
        const total = Math.round(count / 10);
        for (let shard = 0; shard < 8; shard++) {
          counters.push({
            key: org.id,
            bucket: hour,
            metric,
            reason: '',
            shard,
            n: Math.floor(total / 8) + (shard < total % 8 ? 1 : 0),
          });
        }
      }
    }
    for (let i = 0; i < counters.length; i += 1000) {
      await db
        .insertInto('stat_counts')
        .values(counters.slice(i, i + 1000) as never)
        .execute();
    }
    if (PG_URL) {
      await sql`ALTER TABLE campaign_deliveries ENABLE TRIGGER USER`.execute(db);
      await sql`ANALYZE`.execute(db);
    }
  });
  step(`${deliveries} deliveries seeded`);
  const time = async (fn: () => Promise<unknown>) => {
    const ms: number[] = [];
    for (let i = 0; i < reads; i++) ms.push((await timed(fn))[1]);
    ms.sort((a, b) => a - b);
    return { p50: ms[Math.floor(ms.length / 2)] ?? 0, max: ms[ms.length - 1] ?? 0 };
  };
  const statsDay = await time(() => campaignStats(db, org.id, statsCampaign.id, 'day'));
  const statsHour = await time(() => campaignStats(db, org.id, statsCampaign.id, 'hour'));
  const overview = await time(() => orgOverview(db, org.id, 30, Date.now()));
  const check = await campaignStats(db, org.id, statsCampaign.id, 'day');

  const f = (ms: number) => `${ms.toFixed(1)} ms`;
  console.log(`\n## Audiences on ${dialect}\n`);
  console.log('| measure | figure |\n| - | - |');
  console.log(`| ${members.toLocaleString('en-US')} end users seeded | ${(seedMs / 1000).toFixed(1)} s |`);
  console.log(
    `| segment send: ${Number(made.n).toLocaleString('en-US')} of ${segment.count.toLocaleString('en-US')} members turned into deliveries | ${(sendMs / 1000).toFixed(2)} s, ${Math.round(Number(made.n) / (sendMs / 1000)).toLocaleString('en-US')} deliveries/s held, ${dispatchJobs} dispatch jobs |`,
  );
  console.log(
    `| ${deliveries.toLocaleString('en-US')} deliveries seeded (30 days) | ${(deliverySeedMs / 1000).toFixed(1)} s |`,
  );
  console.log(
    `| campaign stats, bucket=day (${check.buckets.length} buckets, ${check.totals.accepted.toLocaleString('en-US')} accepted) | p50 ${f(statsDay.p50)}, max ${f(statsDay.max)} |`,
  );
  console.log(`| campaign stats, bucket=hour | p50 ${f(statsHour.p50)}, max ${f(statsHour.max)} |`);
  console.log(`| 30-day overview | p50 ${f(overview.p50)}, max ${f(overview.max)} |`);
  console.log(`\nPlan of \`GET /api/endusers?attribute=plan:pro\` (first page):\n\n\`\`\`\n${plan}\n\`\`\``);
} finally {
  await database.close();
  if (PG_URL) await dropPostgresSchema(PG_URL, schema);
  rmSync(dir, { recursive: true, force: true });
  clearInterval(keepAlive);
}
