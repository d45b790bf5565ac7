import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import {
  findRecipientStoringMessage,
  recipientQuery,
  recipientStoringMessage,
  recipientsStoringMessages,
} from '../../src/conversations/conversation.fast.js';
import { dropPostgresSchema, postgresSettingWarnings } from '../../src/db/database.js';
import { MESSAGE_COLUMNS } from '../../src/messaging/message.model.js';
import { startServer } from '../../src/server.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { DIALECTS, PG_SECRETS, PG_URL, type TestApp } from '../helpers/app.js';
import { freePortRange } from '../helpers/cli.js';
import { makeAgent, makeOrg } from '../helpers/factories.js';
import { createQuietTestApp, templateMessageRow } from '../helpers/messaging.js';

/**
 * Plans of the send path's statements on PostgreSQL as each connection keeps them (prepared once,
 * planned generically), once the tables have statistics, as autovacuum keeps them: each statement
 * runs under EXPLAIN ANALYZE on a schema where one agent has thousands of open conversations, and
 * what is checked is how many rows the plan reads from each table, not how long it takes. A
 * statement or an index that made a send read every open conversation of its agent fails here.
 */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  Plans?: PlanNode[];
}

function* nodesOf(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* nodesOf(child);
}

const OPEN_CONVERSATIONS = 3000;

describe.skipIf(!PG_URL)('PostgreSQL plans of the send path', () => {
  let t: TestApp;
  let client: pg.Client;
  let orgId: string;
  let agentId: string;
  const phoneOf = (i: number) => `+1415555${String(i).padStart(4, '0')}`;

  beforeAll(async () => {
    t = await createQuietTestApp('postgres');
    orgId = (await makeOrg(t.ctx)).id;
    agentId = (await makeAgent(t.ctx, orgId)).id;
    const now = Date.now();
    const ids = Array.from({ length: OPEN_CONVERSATIONS }, (_, i) => i);
    await t.ctx.db
      .insertInto('end_users')
      .values(
        ids.map((i) => ({
          id: `eu_plan${i}`,
          org_id: orgId,
          name: `User ${i}`,
          name_search: `user ${i}`,
          email: null,
          phone: phoneOf(i),
          tags: '[]',
          origin: 'manual' as const,
          channel_identifiers: '{}',
          consent: '{}',
          created_at: now,
          last_seen_at: null,
          updated_at: now,
        })),
      )
      .execute();
    await t.ctx.db
      .insertInto('conversations')
      .values(
        ids.map((i) => ({
          id: `conv_plan${i}`,
          org_id: orgId,
          agent_id: agentId,
          end_user_id: `eu_plan${i}`,
          trigger_id: null,
          campaign_id: null,
          status: 'open' as const,
          context: null,
          started_at: now,
          last_message_at: now,
          closed_at: null,
          updated_at: now,
        })),
      )
      .execute();
    client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${t.env.PARLEY_PG_SCHEMA}` });
    await client.connect();
    await client.query('analyze end_users, conversations');
    // As a pooled connection ends up running them: one generic plan, kept.
    await client.query('set plan_cache_mode = force_generic_plan');
  });

  afterAll(async () => {
    await client?.end();
    await t?.close();
  });

  /** The plan of one run of a statement, prepared as the server prepares it (rolled back after). */
  async function planOf(name: string, statement: { sql: string; parameters: unknown[] }): Promise<PlanNode> {
    // An array as PostgreSQL's array literal, each element quoted (NULL for null).
    const element = (e: unknown) =>
      e === null || e === undefined ? 'NULL' : `"${String(e).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
    const literal = (v: unknown): string =>
      v === null || v === undefined
        ? 'null'
        : typeof v === 'number'
          ? String(v)
          : Array.isArray(v)
            ? client.escapeLiteral(`{${v.map(element).join(',')}}`)
            : client.escapeLiteral(String(v));
    await client.query(`prepare ${name} as ${statement.sql}`);
    await client.query('begin');
    try {
      const { rows } = await client.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
        `explain (analyze, format json) execute ${name}(${statement.parameters.map(literal).join(', ')})`,
      );
      const plan = rows[0]?.['QUERY PLAN'][0]?.Plan;
      if (!plan) throw new Error('no plan');
      return plan;
    } finally {
      await client.query('rollback');
    }
  }

  /**
   * Rows the plan read from each table (those its scans kept and those their filters dropped), and
   * the rows its joins dropped after reading them.
   */
  function rowsRead(plan: PlanNode): Record<string, number> {
    const read: Record<string, number> = { droppedByJoins: 0 };
    for (const node of nodesOf(plan)) {
      const table = node['Relation Name'];
      if (table && node['Node Type'] !== 'ModifyTable') {
        read[table] =
          (read[table] ?? 0) + node['Actual Rows'] * node['Actual Loops'] + (node['Rows Removed by Filter'] ?? 0);
      }
      read.droppedByJoins = (read.droppedByJoins ?? 0) + (node['Rows Removed by Join Filter'] ?? 0);
    }
    return read;
  }

  it("finds the recipient's open conversation by agent and end user, not among all of the agent's", async () => {
    const plan = await planOf('recipient_read', recipientQuery.statement(t.ctx.db, [orgId, agentId, phoneOf(123)]));
    expect(rowsRead(plan)).toEqual({ key_epoch: 1, end_users: 1, conversations: 1, droppedByJoins: 0 });
    // And it found the right one (the statement itself, run as the send path runs it).
    const { rows } = await recipientQuery(t.ctx.db, [orgId, agentId, phoneOf(123)]);
    expect(rows.map((r) => [r.u_id, r.id])).toEqual([['eu_plan123', 'conv_plan123']]);
  });

  it('does the same when the read also stores the message', async () => {
    const now = Date.now();
    const message = templateMessageRow(
      { orgId, agentId, numberId: 'num_plan', providerMessageId: null, at: now },
      { id: 'msg_plan', to_phone: phoneOf(45) },
    );
    const { rows: epochs } = await client.query<{ epoch: string }>('select epoch from key_epoch where id = 1');
    const values = [
      orgId,
      agentId,
      phoneOf(45),
      ...MESSAGE_COLUMNS.filter((c) => c !== 'conversation_id').map((c) => message[c]),
      Number(epochs[0]?.epoch),
      now - 60_000,
      true,
    ];
    const plan = await planOf('recipient_store', recipientStoringMessage.statement(t.ctx.db, values));
    // Each table read once, for its one row: the insert takes the read's row, not the table's.
    expect(rowsRead(plan)).toMatchObject({ key_epoch: 1, end_users: 1, conversations: 1, droppedByJoins: 0 });
    // Rolled back: nothing was stored by the EXPLAIN.
    expect(await t.ctx.db.selectFrom('messages').select('id').where('id', '=', 'msg_plan').execute()).toEqual([]);
  });

  /** The values of `recipientsStoringMessages` for these sends, as the send path passes them. */
  const STORED = MESSAGE_COLUMNS.filter((c) => c !== 'conversation_id');
  type Store = {
    phone: string;
    epoch: number;
    liveSince: number;
    consentGuard: boolean;
    message: ReturnType<typeof templateMessageRow>;
  };
  const storeValues = (sends: Store[]) => [
    sends.map(() => orgId),
    sends.map(() => agentId),
    sends.map((x) => x.phone),
    sends.map((x) => x.epoch),
    sends.map((x) => x.liveSince),
    sends.map((x) => x.consentGuard),
    ...STORED.map((c) => sends.map((x) => x.message[c])),
  ];
  const currentEpoch = async () =>
    Number((await client.query<{ epoch: string }>('select epoch from key_epoch where id = 1')).rows[0]?.epoch);
  const storeOf = (i: number, id: string, epoch: number, liveSince: number, consentGuard = false): Store => ({
    phone: phoneOf(i),
    epoch,
    liveSince,
    consentGuard,
    message: templateMessageRow(
      { orgId, agentId, numberId: 'num_plan', providerMessageId: null, at: Date.now() },
      { id, to_phone: phoneOf(i), template_parameters: '{"body":["a \\"quoted\\", {braced} \\\\ value"],"header":[]}' },
    ),
  });

  it('does the same for the sends of one turn, in one statement: each recipient read once', async () => {
    const epoch = await currentEpoch();
    const sends = [45, 46, 47].map((i) => storeOf(i, `msg_plan_many${i}`, epoch, Date.now() - 60_000));
    const plan = await planOf('recipients_store', recipientsStoringMessages.statement(t.ctx.db, storeValues(sends)));
    expect(rowsRead(plan)).toMatchObject({ key_epoch: 1, end_users: 3, conversations: 3, droppedByJoins: 0 });
    const ids = sends.map((x) => x.message.id);
    expect(await t.ctx.db.selectFrom('messages').select('id').where('id', 'in', ids).execute()).toEqual([]);
  });

  it("the statement of one turn stores each send's message by its own epoch, its own live conversation and its recipient's consent", async () => {
    const epoch = await currentEpoch();
    const now = Date.now();
    const denied = JSON.stringify({ msgapp: { status: 'denied', source: 'keyword' } });
    await t.ctx.db
      .updateTable('end_users')
      .set({ consent: denied })
      .where('id', 'in', ['eu_plan63', 'eu_plan64'])
      .execute();
    const sends = [
      storeOf(63, 'msg_turn_opted_out', epoch, now - 60_000, true), // a marketing send to who opted out: not stored
      storeOf(64, 'msg_turn_utility', epoch, now - 60_000, false), // consent does not decide it: stored
      storeOf(60, 'msg_turn_live', epoch, now - 60_000), // stored
      storeOf(61, 'msg_turn_stale_key', epoch - 1, now - 60_000), // a key epoch that has moved: not stored
      storeOf(OPEN_CONVERSATIONS + 5, 'msg_turn_unknown', epoch, now - 60_000), // no such end user
      storeOf(62, 'msg_turn_idle', epoch, now + 60_000), // the conversation not live: not stored
      storeOf(60, 'msg_turn_live_again', epoch, now - 60_000), // the same recipient again: stored too
    ];
    const { rows } = await recipientsStoringMessages(t.ctx.db, storeValues(sends));
    expect(rows.map((r) => [r.u_id, r.id, r.stored, Number(r.key_epoch)])).toEqual([
      ['eu_plan63', 'conv_plan63', false, epoch],
      ['eu_plan64', 'conv_plan64', true, epoch],
      ['eu_plan60', 'conv_plan60', true, epoch],
      ['eu_plan61', 'conv_plan61', false, epoch],
      [null, null, false, epoch],
      ['eu_plan62', 'conv_plan62', false, epoch],
      ['eu_plan60', 'conv_plan60', true, epoch],
    ]);
    const stored = await t.ctx.db
      .selectFrom('messages')
      .selectAll()
      .where('id', 'like', 'msg_turn_%')
      .orderBy('id')
      .execute();
    expect(stored.map((m) => [m.id, m.conversation_id])).toEqual([
      ['msg_turn_live', 'conv_plan60'],
      ['msg_turn_live_again', 'conv_plan60'],
      ['msg_turn_utility', 'conv_plan64'],
    ]);
    // Stored whole, the JSON with its quotes, braces and backslashes as it was given; no statuses yet.
    expect(stored[0]).toEqual({ ...sends[2]?.message, conversation_id: 'conv_plan60', status_history: [] });
    expect(rows[0]?.u_consent).toBe(denied);
    await t.ctx.db.deleteFrom('messages').where('id', 'like', 'msg_turn_%').execute();
  });

  it('the sends of one turn of the event loop go as that one statement, and each gets its own answer', async () => {
    const epoch = await currentEpoch();
    const now = Date.now();
    const sends = [
      storeOf(70, 'msg_same_turn_a', epoch, now - 60_000),
      storeOf(71, 'msg_same_turn_b', epoch - 1, now - 60_000),
      storeOf(72, 'msg_same_turn_c', epoch, now - 60_000),
    ];
    const texts: string[] = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const config = args[0] as string | { text?: string };
      texts.push(typeof config === 'string' ? config : (config.text ?? ''));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    let results: Awaited<ReturnType<typeof findRecipientStoringMessage>>[];
    try {
      results = await Promise.all(
        sends.map((x) => findRecipientStoringMessage(t.ctx.db, { orgId, agentId, ...x, message: x.message })),
      );
    } finally {
      pg.Client.prototype.query = query;
    }
    expect(results.map((r) => [r.known?.endUser.id, r.known?.open?.id, r.stored, r.epoch])).toEqual([
      ['eu_plan70', 'conv_plan70', true, epoch],
      ['eu_plan71', 'conv_plan71', false, epoch],
      ['eu_plan72', 'conv_plan72', true, epoch],
    ]);
    // One statement for the three, and none of the statement of one.
    const inserts = texts.filter((text) => /insert into "?messages"?/.test(text));
    expect(inserts).toHaveLength(1);
    expect(inserts[0]).toMatch(/^with v as \(/);
    const stored = await t.ctx.db.selectFrom('messages').select('id').where('id', 'like', 'msg_same_turn_%').execute();
    expect(stored.map((m) => m.id).sort()).toEqual(['msg_same_turn_a', 'msg_same_turn_c']);
    await t.ctx.db.deleteFrom('messages').where('id', 'like', 'msg_same_turn_%').execute();
  });
});

describe('PostgreSQL settings that leave the tables without statistics', () => {
  it('are named in one warning, with what to do; none when autovacuum and track_counts are on', () => {
    expect(postgresSettingWarnings({ autovacuum: 'on', trackCounts: 'on' })).toEqual([]);
    const [autovacuumOff] = postgresSettingWarnings({ autovacuum: 'off', trackCounts: 'on' });
    expect(autovacuumOff).toMatch(/^PostgreSQL runs with autovacuum off, so nothing keeps the statistics/);
    expect(autovacuumOff).toContain('Turn autovacuum on');
    expect(autovacuumOff).toContain('vacuumdb --analyze-only');
    expect(postgresSettingWarnings({ autovacuum: 'on', trackCounts: 'off' })[0]).toMatch(
      /^PostgreSQL runs with track_counts off/,
    );
    expect(postgresSettingWarnings({ autovacuum: 'off', trackCounts: 'off' })).toHaveLength(1);
  });

  it.each(DIALECTS)('are logged by the server at start-up (%s), as the database server has them', async (dialect) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-settings-'));
    const schema = `t_${randomBase62(12).toLowerCase()}`;
    const env: Record<string, string> = {
      LOG_LEVEL: 'warn',
      ...(dialect === 'postgres' && PG_URL ? { DATABASE_URL: PG_URL, PARLEY_PG_SCHEMA: schema, ...PG_SECRETS } : {}),
    };
    const lines: { level: number; msg: string; region?: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    let expected: string[] = [];
    if (dialect === 'postgres' && PG_URL) {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      const { rows } = await client.query<{ name: string; setting: string }>(
        "select name, setting from pg_settings where name in ('autovacuum', 'track_counts')",
      );
      await client.end();
      const setting = (name: string) => rows.find((r) => r.name === name)?.setting ?? '';
      expected = postgresSettingWarnings({ autovacuum: setting('autovacuum'), trackCounts: setting('track_counts') });
    }
    const server = await startServer(loadConfig({ port: await freePortRange(1), data: dataDir }, env), {
      logger,
      logRequests: false,
    });
    try {
      const warnings = lines.filter((l) => l.msg.startsWith('PostgreSQL runs with'));
      expect(warnings.map((w) => [w.level, w.region, w.msg])).toEqual(expected.map((msg) => [40, 'us', msg]));
    } finally {
      await server.close();
      if (dialect === 'postgres' && PG_URL) await dropPostgresSchema(PG_URL, schema);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
