import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';

/**
 * Analytics counters, kept by the database itself as the rows they count change: `stat_counts`
 * holds, per key (an organization ID, or a campaign ID), hour and metric (and a failure's reason),
 * how many. Triggers add to them in the same transaction as the change, so the figures are exact
 * and need no code in the hot paths (sends, status webhooks) nor a job to catch up; the overview
 * and a campaign's stats then read at most a few thousand counter rows, whatever the number of
 * messages and deliveries (a query over a million deliveries would not answer in 200 ms; a rollup
 * job would lag and need its own bookkeeping). Each increment goes to one of 8 shards of its row,
 * so concurrent sends of one organization do not queue on one row lock; readers add the shards up.
 * On PostgreSQL the shard is the connection's (its backend's process ID): a transaction then
 * holds one shard of a counter whatever it writes (a shard drawn at random per row had a batch of
 * 1,000 deliveries lock all eight, so batches on other connections queued behind it, or deadlocked
 * taking them in another order), and connections of different shards never wait for each other.
 * The deliveries a batch inserts are counted once per statement, from its transition table.
 *
 * What is counted (bucket: the hour of the change):
 * - per organization: `sent` (a message the provider took: accepted or beyond), `delivered`,
 *   `read`, `failed` (failed or rejected, with its reason), `received` (inbound messages),
 *   `conversations` (started), `handoffs` (to people), `optouts` (msgapp consent turned denied);
 * - per campaign: `accepted` (deliveries made), `sent`, `delivered`, `read` (of its deliveries'
 *   messages), `failed` (a delivery failed on Parley's side with its error, or its message failed
 *   at the provider with the provider's reason) and `replied` (the end user wrote in the delivery's
 *   conversation within 72 hours of its send: once per delivery; `campaign_deliveries.replied_at`).
 *
 * Counting starts with this migration: what happened before it is not counted.
 */

const HOUR = 3_600_000;
const REPLY_MS = 72 * HOUR;
/** Statuses and ranks as STATUS_RANK has them (written out: a migration is never edited). */
const ACCEPTED = 1;
const DELIVERED = 3;
const READ = 4;

type Dialect = 'pg' | 'sqlite';

const shard = (d: Dialect) => (d === 'pg' ? '(pg_backend_pid() % 8)' : '(abs(random()) % 8)');
const hourOf = (t: string) => `((${t}) / ${HOUR}) * ${HOUR}`;
const conflict = 'ON CONFLICT (key, bucket, metric, reason, shard) DO UPDATE SET n = stat_counts.n + excluded.n';

/** One to `metric` of `key` at `at`. */
const bump = (d: Dialect, key: string, at: string, metric: string, reason = "''") =>
  `INSERT INTO stat_counts (key, bucket, metric, reason, shard, n)
    VALUES (${key}, ${hourOf(at)}, '${metric}', coalesce(substr(${reason}, 1, 200), ''), ${shard(d)}, 1) ${conflict};`;

/** One to `metric` of the campaign of the delivery whose message is NEW, if any. */
const bumpCampaignOfMessage = (d: Dialect, metric: string, reason = "''") =>
  `INSERT INTO stat_counts (key, bucket, metric, reason, shard, n)
    SELECT cd.campaign_id, ${hourOf('NEW.updated_at')}, '${metric}', coalesce(substr(${reason}, 1, 200), ''), ${shard(d)}, count(*)
    FROM campaign_deliveries cd WHERE cd.message_id = NEW.id GROUP BY cd.campaign_id ${conflict};`;

/** PostgreSQL: the statements of a message's change of status, for the organization and for its campaign. */
function pgMessageStatements(oldRank: string, oldFailed: string): string {
  const d: Dialect = 'pg';
  const reached = `(CASE WHEN NEW.status IN ('failed', 'rejected') THEN ${oldRank} ELSE NEW.status_rank END)`;
  const out: string[] = [];
  for (const [metric, rank] of STEPS) {
    out.push(
      `IF ${oldRank} < ${rank} AND ${reached} >= ${rank} THEN
        ${bump(d, 'NEW.org_id', 'NEW.updated_at', metric)} ${bumpCampaignOfMessage(d, metric)} END IF;`,
    );
  }
  out.push(`IF NEW.status IN ('failed', 'rejected') AND NOT (${oldFailed}) THEN
    ${bump(d, 'NEW.org_id', 'NEW.updated_at', 'failed', FAILURE_REASON)} END IF;`);
  out.push(`IF NEW.status = 'failed' AND NOT (${oldFailed}) THEN
    ${bumpCampaignOfMessage(d, 'failed', FAILURE_REASON)} END IF;`);
  return out.join('\n');
}

/** The steps forward a message counts, with the rank that reaches each. */
const STEPS: readonly [string, number][] = [
  ['sent', ACCEPTED],
  ['delivered', DELIVERED],
  ['read', READ],
];
const FAILURE_REASON = 'coalesce(NEW.error_message, CAST(NEW.error_code AS text), NEW.status)';

/** Every trigger, with its table (PostgreSQL; SQLite names its message triggers per step). */
const PG_TRIGGERS: readonly [string, string][] = [
  ['messages_stat_insert', 'messages'],
  ['messages_stat_update', 'messages'],
  ['inbound_stat_insert', 'inbound_messages'],
  ['inbound_stat_linked', 'inbound_messages'],
  ['conversations_stat_insert', 'conversations'],
  ['conversations_stat_handoff', 'conversations'],
  ['end_users_stat_optout', 'end_users'],
  ['deliveries_stat_insert', 'campaign_deliveries'],
  ['deliveries_stat_failed', 'campaign_deliveries'],
];
const PG_FUNCTIONS: readonly string[] = [
  'stat_message_inserted',
  'stat_message_moved',
  'stat_inbound_inserted',
  'stat_inbound_linked',
  'stat_conversation_started',
  'stat_conversation_handoff',
  'stat_end_user_opted_out',
  'stat_delivery_made',
  'stat_delivery_failed',
];
const SQLITE_TRIGGERS: readonly string[] = [
  ...['insert', 'update'].flatMap((tag) =>
    [...STEPS.map(([m]) => m), 'failed', 'campaign_failed'].map((m) => `messages_stat_${tag}_${m}`),
  ),
  'inbound_stat_insert',
  'inbound_stat_replied',
  'inbound_stat_linked',
  'conversations_stat_insert',
  'conversations_stat_handoff',
  'end_users_stat_optout',
  'deliveries_stat_insert',
  'deliveries_stat_failed',
];

export const statCounts: Migration = {
  async up(db: Kysely<unknown>) {
    const d: Dialect = db.getExecutor().adapter instanceof PostgresAdapter ? 'pg' : 'sqlite';
    await db.schema
      .createTable('stat_counts')
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('bucket', 'bigint', (c) => c.notNull())
      .addColumn('metric', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('shard', 'integer', (c) => c.notNull())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('stat_counts_pk', ['key', 'bucket', 'metric', 'reason', 'shard'])
      .execute();
    await db.schema.alterTable('campaign_deliveries').addColumn('replied_at', 'bigint').execute();
    // The triggers find a message's delivery, and a conversation's deliveries, by these.
    await db.schema
      .createIndex('campaign_deliveries_message_idx')
      .on('campaign_deliveries')
      .column('message_id')
      .execute();
    await db.schema
      .createIndex('campaign_deliveries_conversation_idx')
      .on('campaign_deliveries')
      .column('conversation_id')
      .execute();

    const repliedCount = `INSERT INTO stat_counts (key, bucket, metric, reason, shard, n)
      SELECT cd.campaign_id, ${hourOf('NEW.received_at')}, 'replied', '', ${shard(d)}, count(*)
      FROM campaign_deliveries cd
      WHERE cd.conversation_id = NEW.conversation_id AND cd.replied_at IS NULL AND cd.sent_at IS NOT NULL
        AND cd.sent_at <= NEW.received_at AND NEW.received_at <= cd.sent_at + ${REPLY_MS}
      GROUP BY cd.campaign_id ${conflict};
      UPDATE campaign_deliveries SET replied_at = NEW.received_at
      WHERE conversation_id = NEW.conversation_id AND replied_at IS NULL AND sent_at IS NOT NULL
        AND sent_at <= NEW.received_at AND NEW.received_at <= sent_at + ${REPLY_MS};`;
    const denied = (row: string) => `${row}.consent LIKE '%"status":"denied"%'`;

    if (d === 'pg') {
      const fn = async (name: string, body: string) =>
        sql`CREATE FUNCTION ${sql.raw(name)}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
          BEGIN ${sql.raw(body)} RETURN NULL; END $$`.execute(db);
      await fn('stat_message_inserted', pgMessageStatements('0', 'false'));
      await fn('stat_message_moved', pgMessageStatements('OLD.status_rank', "OLD.status IN ('failed', 'rejected')"));
      // A message stored before its send (pending, rank 0: most of them) counts nothing: the function is
      // not entered. (Every status it counts, failed and rejected too, ranks 1 or more.)
      await sql`CREATE TRIGGER messages_stat_insert AFTER INSERT ON messages FOR EACH ROW
        WHEN (NEW.status_rank >= ${sql.lit(ACCEPTED)})
        EXECUTE FUNCTION stat_message_inserted()`.execute(db);
      await sql`CREATE TRIGGER messages_stat_update AFTER UPDATE OF status_rank, status ON messages FOR EACH ROW
        WHEN (NEW.status IS DISTINCT FROM OLD.status) EXECUTE FUNCTION stat_message_moved()`.execute(db);
      await fn(
        'stat_inbound_inserted',
        `${bump(d, 'NEW.org_id', 'NEW.received_at', 'received')}
         IF NEW.conversation_id IS NOT NULL THEN ${repliedCount} END IF;`,
      );
      await sql`CREATE TRIGGER inbound_stat_insert AFTER INSERT ON inbound_messages FOR EACH ROW
        EXECUTE FUNCTION stat_inbound_inserted()`.execute(db);
      // An inbound message is often stored first and joined to its conversation just after.
      await fn('stat_inbound_linked', repliedCount);
      await sql`CREATE TRIGGER inbound_stat_linked AFTER UPDATE OF conversation_id ON inbound_messages FOR EACH ROW
        WHEN (NEW.conversation_id IS NOT NULL AND OLD.conversation_id IS NULL)
        EXECUTE FUNCTION stat_inbound_linked()`.execute(db);
      await fn('stat_conversation_started', bump(d, 'NEW.org_id', 'NEW.started_at', 'conversations'));
      await sql`CREATE TRIGGER conversations_stat_insert AFTER INSERT ON conversations FOR EACH ROW
        EXECUTE FUNCTION stat_conversation_started()`.execute(db);
      await fn('stat_conversation_handoff', bump(d, 'NEW.org_id', 'NEW.handoff_at', 'handoffs'));
      await sql`CREATE TRIGGER conversations_stat_handoff AFTER UPDATE OF handoff_at ON conversations FOR EACH ROW
        WHEN (NEW.handoff_at IS NOT NULL AND NEW.handoff_at IS DISTINCT FROM OLD.handoff_at)
        EXECUTE FUNCTION stat_conversation_handoff()`.execute(db);
      await fn('stat_end_user_opted_out', bump(d, 'NEW.org_id', 'NEW.updated_at', 'optouts'));
      await sql`CREATE TRIGGER end_users_stat_optout AFTER UPDATE OF consent ON end_users FOR EACH ROW
        WHEN (${sql.raw(denied('NEW'))} AND NOT ${sql.raw(denied('OLD'))})
        EXECUTE FUNCTION stat_end_user_opted_out()`.execute(db);
      // Once per statement: a batch's deliveries (up to 1,000 rows) as one increment per campaign and hour.
      await fn(
        'stat_delivery_made',
        `INSERT INTO stat_counts (key, bucket, metric, reason, shard, n)
          SELECT campaign_id, ${hourOf('created_at')}, 'accepted', '', ${shard(d)}, count(*)
          FROM made GROUP BY 1, 2 ORDER BY 1, 2 ${conflict};`,
      );
      await sql`CREATE TRIGGER deliveries_stat_insert AFTER INSERT ON campaign_deliveries
        REFERENCING NEW TABLE AS made FOR EACH STATEMENT EXECUTE FUNCTION stat_delivery_made()`.execute(db);
      await fn('stat_delivery_failed', bump(d, 'NEW.campaign_id', 'NEW.updated_at', 'failed', 'NEW.error'));
      await sql`CREATE TRIGGER deliveries_stat_failed AFTER UPDATE OF state ON campaign_deliveries FOR EACH ROW
        WHEN (NEW.state = 'failed' AND OLD.state <> 'failed') EXECUTE FUNCTION stat_delivery_failed()`.execute(db);
      return;
    }

    // SQLite: a trigger has one WHEN, so each step of a message is a trigger of its own.
    const reason = FAILURE_REASON;
    for (const [event, oldRank, oldFailed] of [
      ['INSERT', '0', '0'],
      ['UPDATE OF status_rank, status', 'OLD.status_rank', "OLD.status IN ('failed', 'rejected')"],
    ] as const) {
      const tag = event === 'INSERT' ? 'insert' : 'update';
      const reached = `(CASE WHEN NEW.status IN ('failed', 'rejected') THEN ${oldRank} ELSE NEW.status_rank END)`;
      for (const [metric, rank] of STEPS) {
        await sql`CREATE TRIGGER ${sql.raw(`messages_stat_${tag}_${metric}`)} AFTER ${sql.raw(event)} ON messages
          WHEN ${sql.raw(`${oldRank} < ${rank} AND ${reached} >= ${rank}`)}
          BEGIN ${sql.raw(bump(d, 'NEW.org_id', 'NEW.updated_at', metric))} ${sql.raw(bumpCampaignOfMessage(d, metric))} END`.execute(
          db,
        );
      }
      await sql`CREATE TRIGGER ${sql.raw(`messages_stat_${tag}_failed`)} AFTER ${sql.raw(event)} ON messages
        WHEN ${sql.raw(`NEW.status IN ('failed', 'rejected') AND NOT (${oldFailed})`)}
        BEGIN ${sql.raw(bump(d, 'NEW.org_id', 'NEW.updated_at', 'failed', reason))} END`.execute(db);
      await sql`CREATE TRIGGER ${sql.raw(`messages_stat_${tag}_campaign_failed`)} AFTER ${sql.raw(event)} ON messages
        WHEN ${sql.raw(`NEW.status = 'failed' AND NOT (${oldFailed})`)}
        BEGIN ${sql.raw(bumpCampaignOfMessage(d, 'failed', reason))} END`.execute(db);
    }
    await sql`CREATE TRIGGER inbound_stat_insert AFTER INSERT ON inbound_messages
      BEGIN ${sql.raw(bump(d, 'NEW.org_id', 'NEW.received_at', 'received'))} END`.execute(db);
    await sql`CREATE TRIGGER inbound_stat_replied AFTER INSERT ON inbound_messages WHEN NEW.conversation_id IS NOT NULL
      BEGIN ${sql.raw(repliedCount)} END`.execute(db);
    // An inbound message is often stored first and joined to its conversation just after.
    await sql`CREATE TRIGGER inbound_stat_linked AFTER UPDATE OF conversation_id ON inbound_messages
      WHEN NEW.conversation_id IS NOT NULL AND OLD.conversation_id IS NULL
      BEGIN ${sql.raw(repliedCount)} END`.execute(db);
    await sql`CREATE TRIGGER conversations_stat_insert AFTER INSERT ON conversations
      BEGIN ${sql.raw(bump(d, 'NEW.org_id', 'NEW.started_at', 'conversations'))} END`.execute(db);
    await sql`CREATE TRIGGER conversations_stat_handoff AFTER UPDATE OF handoff_at ON conversations
      WHEN NEW.handoff_at IS NOT NULL AND (OLD.handoff_at IS NULL OR OLD.handoff_at <> NEW.handoff_at)
      BEGIN ${sql.raw(bump(d, 'NEW.org_id', 'NEW.handoff_at', 'handoffs'))} END`.execute(db);
    await sql`CREATE TRIGGER end_users_stat_optout AFTER UPDATE OF consent ON end_users
      WHEN ${sql.raw(denied('NEW'))} AND NOT ${sql.raw(denied('OLD'))}
      BEGIN ${sql.raw(bump(d, 'NEW.org_id', 'NEW.updated_at', 'optouts'))} END`.execute(db);
    await sql`CREATE TRIGGER deliveries_stat_insert AFTER INSERT ON campaign_deliveries
      BEGIN ${sql.raw(bump(d, 'NEW.campaign_id', 'NEW.created_at', 'accepted'))} END`.execute(db);
    await sql`CREATE TRIGGER deliveries_stat_failed AFTER UPDATE OF state ON campaign_deliveries
      WHEN NEW.state = 'failed' AND OLD.state <> 'failed'
      BEGIN ${sql.raw(bump(d, 'NEW.campaign_id', 'NEW.updated_at', 'failed', 'NEW.error'))} END`.execute(db);
  },
  async down(db: Kysely<unknown>) {
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      for (const [name, table] of PG_TRIGGERS) {
        await sql`DROP TRIGGER IF EXISTS ${sql.raw(name)} ON ${sql.raw(table)}`.execute(db);
      }
      for (const name of PG_FUNCTIONS) await sql`DROP FUNCTION IF EXISTS ${sql.raw(name)}()`.execute(db);
    } else {
      for (const name of SQLITE_TRIGGERS) await sql`DROP TRIGGER IF EXISTS ${sql.raw(name)}`.execute(db);
    }
    await db.schema.dropTable('stat_counts').execute();
    await db.schema.dropIndex('campaign_deliveries_conversation_idx').ifExists().execute();
    await db.schema.dropIndex('campaign_deliveries_message_idx').ifExists().execute();
    await db.schema.alterTable('campaign_deliveries').dropColumn('replied_at').execute();
  },
};
