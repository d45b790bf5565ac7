import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, PG_SECRETS, PG_URL, REDIS_URL, type TestApp } from '../helpers/app.js';
import { freePort, runCli, type ServeProcess, startServe } from '../helpers/cli.js';
import {
  inboundPayload,
  makeSendingTenant,
  randomPhone,
  signedWebhook,
  statusPayload,
  templateMessageRow,
  templateSend,
} from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

/**
 * Three `parley serve` processes on one PostgreSQL schema and one Redis, as a deployment behind a
 * load balancer runs them: what one node does, every node must see.
 */
const NODES = 3;
const RATE_LIMIT = 8;

type Node = ServeProcess & { url: string; name: string; dataDir: string };

describe.skipIf(!PG_URL || !REDIS_URL)('several nodes as one (PostgreSQL + Redis)', () => {
  const schema = `mn_${randomBase62(10).toLowerCase()}`;
  const prefix = `parley_mn_${randomBase62(6)}`;
  const nodes: Node[] = [];
  let setup: TestApp;
  let admin: pg.Client;

  const common = (): Record<string, string> => ({
    PARLEY_PG_SCHEMA: schema,
    REDIS_URL: REDIS_URL ?? '',
    PARLEY_REDIS_PREFIX: prefix,
    PARLEY_SEND_RATE_LIMIT: String(RATE_LIMIT),
    PARLEY_SEND_RATE_LIMIT_ORG: '1000',
    ...PG_SECRETS,
  });
  /** Each node names itself to PostgreSQL, so the test can tell whose backend is doing what. */
  const nodeUrl = (name: string) => {
    const url = new URL(PG_URL ?? '');
    url.searchParams.set('application_name', name);
    return url.toString();
  };

  beforeAll(async () => {
    // Three nodes starting at once on a fresh database: all of them come up (schema, migrations
    // and the job store are created under locks).
    const names = Array.from({ length: NODES }, (_, i) => `parley-${schema}-${i}`);
    const started = await Promise.allSettled(
      names.map(async (name) => {
        const port = await freePort();
        const dataDir = mkdtempSync(join(tmpdir(), 'parley-node-'));
        const p = await startServe(['--port', String(port)], {
          ...common(),
          DATABASE_URL: nodeUrl(name),
          PARLEY_DATA_DIR: dataDir,
        });
        const url = p.ready.regions[0]?.url ?? '';
        return { ...p, url, name, dataDir };
      }),
    );
    // Every node that did start is stopped by afterAll, even when another one failed.
    for (const s of started) if (s.status === 'fulfilled') nodes.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    setup = await createTestApp('postgres', { env: common(), workJobs: false });
    admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    for (const n of nodes) rmSync(n.dataDir, { recursive: true, force: true });
    await admin?.end();
    await setup?.close();
  });

  /** The node (of `candidates`) whose connection waits on a lock, found by its application name, killed with SIGKILL. */
  async function killNodeWaitingOnALock(candidates: readonly Node[], what: string): Promise<Node | undefined> {
    let holder: string | undefined;
    await until(async () => {
      const { rows } = await admin.query<{ application_name: string }>(
        "select application_name from pg_stat_activity where wait_event_type = 'Lock' and application_name like $1",
        [`parley-${schema}-%`],
      );
      holder = rows[0]?.application_name;
      return holder !== undefined;
    }, what);
    const victim = candidates.find((n) => n.name === holder);
    expect(victim).toBeDefined();
    victim?.child.kill('SIGKILL');
    await victim?.stop();
    return victim;
  }

  it('all nodes came up and are ready', async () => {
    expect(nodes).toHaveLength(NODES);
    for (const n of nodes) {
      const res = await fetch(`${n.url}/api/health`);
      expect(res.status).toBe(200);
    }
  });

  it('a key revoked from the CLI is refused by every node on the next request, though every node caches it', async () => {
    const { org, orgKey } = await makeSendingTenant(setup.ctx);
    const created = await fetch(`${nodes[0]?.url}/api/endusers`, {
      method: 'POST',
      headers: { ...orgKey.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Cached everywhere', origin: 'imported' }),
    });
    expect(created.status).toBe(201);
    const { _id: endUserId } = (await created.json()) as { _id: string };
    // The list reads the epoch before the cache; GET by ID reads it in its own query.
    const paths = ['/api/endusers', `/api/endusers/${endUserId}`];
    for (const n of nodes) {
      for (let i = 0; i < 3; i++) {
        for (const path of paths) {
          const res = await fetch(`${n.url}${path}`, { headers: orgKey.auth });
          expect(res.status).toBe(200);
        }
      }
    }
    const cliEnv = { ...setup.env, PARLEY_DATA_DIR: mkdtempSync(join(tmpdir(), 'parley-cli-')) };
    const free = await runCli(['org', 'plan', '--org', org.id, '--plan', 'free'], cliEnv);
    expect(free.code).toBe(0);
    for (const n of nodes) {
      for (const path of paths) {
        const res = await fetch(`${n.url}${path}`, { headers: orgKey.auth });
        expect(res.status).toBe(403);
      }
    }
    const paid = await runCli(['org', 'plan', '--org', org.id, '--plan', 'paid'], cliEnv);
    expect(paid.code).toBe(0);
    for (const n of nodes) expect((await fetch(`${n.url}${paths[1]}`, { headers: orgKey.auth })).status).toBe(200);

    const revoked = await runCli(['key', 'revoke', '--org', org.id, '--id', orgKey.id], cliEnv);
    expect(revoked.code).toBe(0);
    for (const n of nodes) {
      for (const path of paths) {
        const res = await fetch(`${n.url}${path}`, { headers: orgKey.auth });
        expect(res.status).toBe(401);
        expect(await res.json()).toMatchObject({ code: 'UNAUTHORIZED' });
      }
    }
  });

  it('the send rate limit is exact across nodes', async () => {
    const { agentKey } = await makeSendingTenant(setup.ctx);
    const send = (n: Node) =>
      fetch(`${n.url}/api/channels/send`, {
        method: 'POST',
        headers: { ...agentKey.auth, 'content-type': 'application/json' },
        body: JSON.stringify(templateSend()),
      });
    const statuses: number[] = [];
    for (let i = 0; i < RATE_LIMIT; i++) statuses.push((await send(nodes[i % NODES] as Node)).status);
    expect(statuses).toEqual(Array(RATE_LIMIT).fill(200));
    for (const n of nodes) {
      const refused = await send(n);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('60');
      expect(await refused.json()).toEqual({ success: false, error: expect.any(String) });
    }
  });

  it('one Idempotency-Key sent to two nodes at once sends once', async () => {
    const { agentKey } = await makeSendingTenant(setup.ctx);
    const to = randomPhone();
    const body = JSON.stringify(templateSend(undefined, to));
    const idempotencyKey = `idem-${randomBase62(10)}`;
    const [a, b] = await Promise.all(
      [nodes[0], nodes[1]].map((n) =>
        fetch(`${n?.url}/api/channels/send`, {
          method: 'POST',
          headers: { ...agentKey.auth, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
          body,
        }),
      ),
    );
    const answers = [
      { status: a?.status, body: await a?.json() },
      { status: b?.status, body: await b?.json() },
    ];
    const ok = answers.filter((x) => x.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    // The other one is the same answer replayed, or told the first is still in flight.
    for (const x of answers) {
      if (x.status === 200) expect(x.body).toEqual(ok[0]?.body);
      else expect(x).toEqual({ status: 409, body: { success: false, error: expect.any(String) } });
    }
    const sent = await setup.ctx.db.selectFrom('messages').select('id').where('to_phone', '=', to).execute();
    expect(sent).toHaveLength(1);
  });

  it('a node killed with kill -9 after acknowledging a provider webhook: another node applies it within 10 s', async () => {
    const { number } = await makeSendingTenant(setup.ctx);
    const from = randomPhone();
    const messageId = `wamid.killed${randomBase62(10)}`;
    const { body, headers } = signedWebhook(
      PG_SECRETS.PARLEY_WEBHOOK_APP_SECRET,
      inboundPayload(number.phoneNumberId, from, messageId, 'are you there?'),
    );
    // Hold the table the job writes to, so the node that claims the job is caught in the middle.
    const blocker = new pg.Client({ connectionString: PG_URL });
    await blocker.connect();
    let victim: Node | undefined;
    try {
      await blocker.query(`set search_path = ${schema}`);
      await blocker.query('begin');
      await blocker.query('lock table inbound_messages in exclusive mode');
      const target = nodes[2] as Node;
      const ack = await fetch(`${target.url}/webhooks/msgapp`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body,
      });
      expect(ack.status).toBe(200);
      expect(await ack.json()).toEqual({ received: 1 });
      // Whichever node claimed the job is now waiting on the lock: that is the one to kill.
      victim = await killNodeWaitingOnALock(nodes, 'a node to claim the webhook job');
    } finally {
      await blocker.query('rollback').catch(() => undefined);
      await blocker.end();
    }
    const killedAt = Date.now();
    await until(
      async () =>
        (
          await setup.ctx.db
            .selectFrom('inbound_messages')
            .select('provider_message_id')
            .where('provider_message_id', '=', messageId)
            .execute()
        ).length === 1,
      'another node to apply the webhook',
      30_000,
    );
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    const stored = await setup.ctx.db
      .selectFrom('inbound_messages')
      .select(['from_phone', 'text'])
      .where('provider_message_id', '=', messageId)
      .execute();
    expect(stored).toEqual([{ from_phone: from, text: 'are you there?' }]);
    // The survivors still answer; the victim is gone.
    for (const n of nodes.filter((x) => x !== victim)) {
      expect((await fetch(`${n.url}/api/health`)).status).toBe(200);
    }
  });

  it('a node killed with kill -9 in the middle of a batch of status webhooks: another node applies them', async () => {
    const tenant = await makeSendingTenant(setup.ctx);
    const now = Date.now();
    const wamids = Array.from({ length: 3 }, () => `wamid.batch${randomBase62(10)}`);
    await setup.ctx.db
      .insertInto('messages')
      .values(
        wamids.map((wamid) =>
          templateMessageRow({
            orgId: tenant.org.id,
            agentId: tenant.agent.id,
            numberId: tenant.number.id,
            providerMessageId: wamid,
            at: now,
          }),
        ),
      )
      .execute();
    const live = nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
    expect(live.length).toBeGreaterThanOrEqual(2);
    // Hold the table a batch records statuses in, so the node whose batch claimed them is caught in it.
    const blocker = new pg.Client({ connectionString: PG_URL });
    await blocker.connect();
    try {
      await blocker.query(`set search_path = ${schema}`);
      await blocker.query('begin');
      await blocker.query('lock table message_statuses in exclusive mode');
      const acks = await Promise.all(
        wamids.map((wamid) => {
          const { body, headers } = signedWebhook(
            PG_SECRETS.PARLEY_WEBHOOK_APP_SECRET,
            statusPayload(tenant.number.phoneNumberId, [{ id: wamid, status: 'delivered', timestamp: now }]),
          );
          return fetch(`${live[0]?.url}/webhooks/msgapp`, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body,
          });
        }),
      );
      expect(acks.map((a) => a.status)).toEqual([200, 200, 200]);
      await killNodeWaitingOnALock(live, 'a node to claim the status webhooks');
    } finally {
      await blocker.query('rollback').catch(() => undefined);
      await blocker.end();
    }
    const killedAt = Date.now();
    const statuses = () =>
      setup.ctx.db
        .selectFrom('messages')
        .innerJoin('message_statuses', 'message_statuses.message_id', 'messages.id')
        .select(['messages.provider_message_id', 'messages.status', 'message_statuses.status as recorded'])
        .where('messages.provider_message_id', 'in', wamids)
        .execute();
    await until(async () => (await statuses()).length === 3, 'another node to apply the statuses', 30_000);
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    // Both sides in the same (code unit) order.
    const applied = (await statuses()).map((r) => ({ ...r, provider_message_id: String(r.provider_message_id) }));
    expect(applied.sort((a, b) => (a.provider_message_id < b.provider_message_id ? -1 : 1))).toEqual(
      [...wamids].sort().map((wamid) => ({ provider_message_id: wamid, status: 'delivered', recorded: 'delivered' })),
    );
  });
});
