import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/context.js';
import { dropPostgresSchema } from '../../src/db/database.js';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { buildApp } from '../../src/http/app.js';
import { PROVIDER_WEBHOOK_QUEUE } from '../../src/messaging/webhook.service.js';
import { signBody } from '../../src/sandbox/index.js';
import { ManualClock } from '../../src/shared/clock.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { DIALECTS, PG_SECRETS, PG_URL, type TestApp } from '../helpers/app.js';
import { runCli, runCliProcess } from '../helpers/cli.js';
import { expectMatchesContract, openApiDocument } from '../helpers/contract.js';
import { makeKey } from '../helpers/factories.js';
import {
  createMessagingApp,
  createQuietTestApp,
  endUsersWithPhone,
  failWrites,
  inboundPayload,
  type MessagingTestApp,
  makeNumber,
  makeSendingTenant,
  postWebhook,
  randomPhone,
  signedWebhook,
  startFakeProvider,
  statusPayload,
  storedWebhooks,
  templateMessageRow,
  templateSend,
} from '../helpers/messaging.js';

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);
const DAY = 24 * 60 * 60 * 1000;

describe.each(DIALECTS)('provider webhooks (%s)', (dialect) => {
  let t: MessagingTestApp;
  let tenant: Awaited<ReturnType<typeof makeSendingTenant>>;
  const clock = new ManualClock(T0);
  beforeAll(async () => {
    // The sandbox sends no statuses here: the tests post them, in the orders they need.
    t = await createMessagingApp(dialect, {
      clock,
      webhooks: false,
      env: { PARLEY_WEBHOOK_VERIFY_TOKEN: 'verify-me' },
    });
    tenant = await makeSendingTenant(t.ctx);
  });
  afterAll(async () => {
    await t.close();
  });

  const post = async (payload: unknown) => {
    const { body, headers } = signedWebhook(t.ctx.messaging.appSecret, payload);
    const res = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: body });
    await t.ctx.messaging.webhooks.idle();
    return res;
  };
  const sendOne = async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: tenant.agentKey.auth,
      payload: templateSend(),
    });
    expect(res.statusCode).toBe(200);
    return res.json().messageId as string;
  };
  const changesOf = (p: ReturnType<typeof statusPayload>) => p.entry.flatMap((e) => e.changes);
  const getMessage = (id: string, headers: Record<string, string> = tenant.agentKey.auth) =>
    t.app.inject({ method: 'GET', url: `/api/messages/${id}`, headers });
  const pid = () => tenant.number.phoneNumberId;
  const ownIdOf = async (providerMessageId: string) =>
    (
      await t.ctx.db
        .selectFrom('messages')
        .select('id')
        .where('provider_message_id', '=', providerMessageId)
        .executeTakeFirstOrThrow()
    ).id;

  it('answers the verification handshake only with the configured token', async () => {
    const ok = await t.app.inject({
      method: 'GET',
      url: '/webhooks/msgapp?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444',
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toBe('1158201444');
    const wrong = await t.app.inject({
      method: 'GET',
      url: '/webhooks/msgapp?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1',
    });
    expect(wrong.statusCode).toBe(403);
    const mode = await t.app.inject({
      method: 'GET',
      url: '/webhooks/msgapp?hub.mode=unsubscribe&hub.verify_token=verify-me&hub.challenge=1',
    });
    expect(mode.statusCode).toBe(403);
  });

  it('refuses a missing or bad signature with 401, and checks the raw bytes', async () => {
    const payload = inboundPayload(pid(), randomPhone(), `wamid.sig${Date.now()}`, 'Grüße, 你好 👋', 'Zoë', T0);
    const { body, headers } = signedWebhook(t.ctx.messaging.appSecret, payload);
    expect(body).toContain('\\u00fc'); // escaped as the provider does before signing

    const missing = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: { 'content-type': 'application/json' },
      payload: body,
    });
    expect(missing.statusCode).toBe(401);
    const bad = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: { ...headers, 'x-hub-signature-256': signBody('another secret', body) },
      payload: body,
    });
    expect(bad.statusCode).toBe(401);
    const malformed = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: { ...headers, 'x-hub-signature-256': 'sha256=zz' },
      payload: body,
    });
    expect(malformed.statusCode).toBe(401);
    // Signed over a re-serialised body (non-ASCII unescaped): does not match the bytes sent.
    const reserialised = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: { ...headers, 'x-hub-signature-256': signBody(t.ctx.messaging.appSecret, JSON.stringify(payload)) },
      payload: body,
    });
    expect(reserialised.statusCode).toBe(401);

    const good = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: body });
    expect(good.statusCode).toBe(200);
    expect(good.json()).toEqual({ received: 1 });
    await t.ctx.messaging.webhooks.idle();
    const stored = await t.ctx.db
      .selectFrom('inbound_messages')
      .select('text')
      .where('provider_message_id', '=', payload.entry[0]?.changes[0]?.value.messages[0]?.id ?? '')
      .executeTakeFirstOrThrow();
    expect(stored.text).toBe('Grüße, 你好 👋');

    const notJson = '{"object":';
    const res = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: {
        'content-type': 'application/json',
        'x-hub-signature-256': signBody(t.ctx.messaging.appSecret, notJson),
      },
      payload: notJson,
    });
    expect(res.statusCode).toBe(400);
  });

  it('statuses arriving out of order only move forward, and each is kept once in the history', async () => {
    const id = await sendOne();
    expect((await post(statusPayload(pid(), [{ id, status: 'read', timestamp: T0 + 3000 }]))).statusCode).toBe(200);
    await post(statusPayload(pid(), [{ id, status: 'delivered', timestamp: T0 + 2000 }]));
    await post(statusPayload(pid(), [{ id, status: 'sent', timestamp: T0 + 1000 }]));
    // Duplicates, also inside one webhook.
    await post(
      statusPayload(pid(), [
        { id, status: 'delivered', timestamp: T0 + 2000 },
        { id, status: 'delivered', timestamp: T0 + 2000 },
      ]),
    );
    const res = await getMessage(id);
    expect(res.statusCode).toBe(200);
    expectMatchesContract(t.app, 'GET', '/api/messages/{messageId}', res);
    const message = res.json().message;
    expect(message).toMatchObject({ messageId: id, status: 'read', channel: 'msgapp', convId: tenant.agent.id });
    expect(message.statuses.map((s: { status: string }) => s.status)).toEqual(['sent', 'delivered', 'read']);
    expect(message.statuses[0].timestamp).toBe(T0 + 1000);
  });

  it('a body is stored before it is acknowledged and cleared once applied', async () => {
    const id = await sendOne();
    const payload = statusPayload(pid(), [{ id, status: 'delivered', timestamp: T0 + 1000 }]);
    const { body, headers } = signedWebhook(t.ctx.messaging.appSecret, payload);
    // The first attempt at applying it fails, so the body is seen waiting for its retry.
    const restore = await failWrites(t, 'message_statuses', 'INSERT', {
      column: 'message_id',
      value: await ownIdOf(id),
    });
    t.ctx.messaging.webhooks.retryDelaysMs = [300];
    try {
      const res = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: body });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ received: 1 });
      // Acknowledged: the body is a durable job of the provider-webhook queue until it is applied.
      const pending = (await t.ctx.jobs.counts()).filter((c) => c.queue === PROVIDER_WEBHOOK_QUEUE);
      expect(pending.reduce((n, c) => n + (c.state === 'dead' ? 0 : c.count), 0)).toBe(1);
      expect(await storedWebhooks(t)).toEqual([]);
    } finally {
      await restore();
    }
    await t.ctx.messaging.webhooks.idle();
    t.ctx.messaging.webhooks.retryDelaysMs = [500, 2000, 8000, 30000];
    expect(await storedWebhooks(t)).toEqual([]);
    expect((await t.ctx.jobs.counts()).filter((c) => c.queue === PROVIDER_WEBHOOK_QUEUE && c.count > 0)).toEqual([]);
    expect((await getMessage(id)).json().message.status).toBe('delivered');
  });

  it('many bodies at once: each status applied once (in batches, one commit each); a failing one holds back no other', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await sendOne());
    const bad = ids[7] ?? '';
    const restore = await failWrites(t, 'message_statuses', 'INSERT', {
      column: 'message_id',
      value: await ownIdOf(bad),
    });
    const webhooks = t.ctx.messaging.webhooks;
    const batchSizes: number[] = [];
    const applyStatusBatch = webhooks.applyStatusBatch;
    webhooks.applyStatusBatch = (jobs, complete) => {
      batchSizes.push(jobs.length);
      return applyStatusBatch.call(webhooks, jobs, complete);
    };
    webhooks.retryDelaysMs = [20, 20];
    const before = await storedWebhooks(t);
    try {
      // Stored in one transaction, so that the first claim finds them all.
      await t.ctx.db.transaction().execute(async (trx) => {
        for (const [i, id] of ids.entries()) {
          const raw = JSON.stringify(statusPayload(pid(), [{ id, status: 'delivered', timestamp: T0 + 5000 + i }]));
          await t.ctx.jobs.enqueue(PROVIDER_WEBHOOK_QUEUE, { raw, receivedAt: T0 + 6000 }, { db: trx });
        }
      });
      t.ctx.jobs.wake(PROVIDER_WEBHOOK_QUEUE);
      await webhooks.idle();
    } finally {
      webhooks.applyStatusBatch = applyStatusBatch;
      webhooks.retryDelaysMs = [500, 2000, 8000, 30000];
      await restore();
    }
    for (const id of ids) {
      const message = (await getMessage(id)).json().message;
      expect(message.status, id).toBe(id === bad ? 'accepted' : 'delivered');
      if (id !== bad)
        expect(message.statuses.filter((x: { status: string }) => x.status === 'delivered')).toHaveLength(1);
    }
    const kept = (await storedWebhooks(t)).filter((r) => !before.some((b) => b.id === r.id));
    expect(kept).toMatchObject([{ state: 'failed', last_error: expect.stringMatching(/injected failure/) }]);
    // The tests below count the kept bodies: this one has been checked.
    await t.ctx.db
      .deleteFrom('job_dead_letters')
      .where(
        'id',
        'in',
        kept.map((r) => r.id),
      )
      .execute();
    // The first claim took all 30, one batch (of up to 100); the failing body rolled it back, and
    // each of its bodies then ran on its own.
    expect(batchSizes[0]).toBe(30);
  });

  it('a backlog of bodies: one batch at a time on SQLite, several at once on PostgreSQL', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push(await sendOne());
    const webhooks = t.ctx.messaging.webhooks;
    let running = 0;
    let mostAtOnce = 0;
    let batches = 0;
    const applyStatusBatch = webhooks.applyStatusBatch;
    webhooks.applyStatusBatch = async (jobs, complete) => {
      batches++;
      mostAtOnce = Math.max(mostAtOnce, ++running);
      try {
        return await applyStatusBatch.call(webhooks, jobs, complete);
      } finally {
        running--;
      }
    };
    try {
      // 250 bodies, stored in one transaction so that a claim finds them all: three batches' worth.
      await t.ctx.db.transaction().execute(async (trx) => {
        for (let i = 0; i < 250; i++) {
          const id = ids[i % ids.length] ?? '';
          const status = (['sent', 'delivered', 'read'] as const)[i % 3] ?? 'sent';
          const raw = JSON.stringify(statusPayload(pid(), [{ id, status, timestamp: T0 + 7000 + i }]));
          await t.ctx.jobs.enqueue(PROVIDER_WEBHOOK_QUEUE, { raw, receivedAt: T0 + 8000 }, { db: trx });
        }
      });
      t.ctx.jobs.wake(PROVIDER_WEBHOOK_QUEUE);
      await webhooks.idle();
    } finally {
      webhooks.applyStatusBatch = applyStatusBatch;
    }
    expect(batches).toBeGreaterThanOrEqual(3);
    // On SQLite batches claimed together would only queue for the one connection, running back to
    // back without a break for requests; on PostgreSQL they run side by side.
    if (dialect === 'sqlite') expect(mostAtOnce).toBe(1);
    else expect(mostAtOnce).toBeGreaterThan(1);
    for (const id of ids) {
      const message = (await getMessage(id)).json().message;
      expect(message.status, id).toBe('read');
      expect(message.statuses.map((s: { status: string }) => s.status)).toEqual(['sent', 'delivered', 'read']);
    }
  });

  it('a batch leaves a status for a message it cannot find to its body’s own run, which keeps it pending', async () => {
    const known = await sendOne();
    const unknown = `wamid.LATER${Date.now()}`;
    const job = (id: string, statuses: Parameters<typeof statusPayload>[1]) => ({
      payload: { raw: JSON.stringify(statusPayload(pid(), statuses)), receivedAt: T0 + 6000 },
      job: { id, queue: PROVIDER_WEBHOOK_QUEUE, attempt: 1, maxAttempts: 3 },
    });
    const finished = await t.ctx.messaging.webhooks.applyStatusBatch([
      job('job_known', [{ id: known, status: 'read', timestamp: T0 + 5000 }]),
      job('job_mixed', [
        { id: known, status: 'delivered', timestamp: T0 + 4000 },
        { id: unknown, status: 'delivered', timestamp: T0 + 4000 },
      ]),
    ]);
    // The body whose message was found is finished; the other is left to run on its own.
    expect(finished).toEqual(['job_known']);
    const pendingOf = () =>
      t.ctx.db.selectFrom('pending_statuses').select('status').where('provider_message_id', '=', unknown).execute();
    expect(await pendingOf()).toEqual([]);
    expect((await getMessage(known)).json().message.status).toBe('read');

    // Its own run stores the pending status (committed), and applies the known one only once.
    await postWebhook(
      t,
      statusPayload(pid(), [
        { id: known, status: 'delivered', timestamp: T0 + 4000 },
        { id: unknown, status: 'delivered', timestamp: T0 + 4000 },
      ]),
    );
    await t.ctx.messaging.webhooks.idle();
    expect(await pendingOf()).toEqual([{ status: 'delivered' }]);
    const statuses = (await getMessage(known)).json().message.statuses as { status: string }[];
    expect(statuses.map((x) => x.status).sort()).toEqual(['delivered', 'read']);
  });

  it('a batch applies its statuses as one after the other would: each once, forward only, a failure with its error, an event each for the agent’s endpoints', async () => {
    const a = await sendOne();
    const b = await sendOne();
    const mine = await createEndpoint(t.ctx, {
      orgId: tenant.org.id,
      agentId: tenant.agent.id,
      url: 'https://127.0.0.1:9/',
      events: 'message.status',
    });
    const others = await createEndpoint(t.ctx, {
      orgId: tenant.org.id,
      agentId: tenant.other.id,
      url: 'https://127.0.0.1:9/',
      events: 'message.status',
    });
    const failure = {
      code: 131026,
      title: 'Message undeliverable',
      error_data: { details: 'Receiver is incapable of receiving this message' },
    };
    const job = (id: string, receivedAt: number, statuses: Parameters<typeof statusPayload>[1]) => ({
      payload: { raw: JSON.stringify(statusPayload(pid(), statuses)), receivedAt },
      job: { id, queue: PROVIDER_WEBHOOK_QUEUE, attempt: 1, maxAttempts: 3 },
    });
    try {
      const finished = await t.ctx.messaging.webhooks.applyStatusBatch([
        job('job_1', T0 + 7001, [{ id: a, status: 'read', timestamp: T0 + 3000 }]),
        job('job_2', T0 + 7002, [
          { id: a, status: 'delivered', timestamp: T0 + 2000 },
          { id: b, status: 'sent', timestamp: T0 + 1000 },
        ]),
        // The same status again (a redelivery with another time): recorded once, the first.
        job('job_3', T0 + 7003, [{ id: a, status: 'read', timestamp: T0 + 4000 }]),
        job('job_4', T0 + 7004, [{ id: b, status: 'failed', timestamp: T0 + 2000, errors: [failure] }]),
      ]);
      expect(finished.sort()).toEqual(['job_1', 'job_2', 'job_3', 'job_4']);
      const first = (await getMessage(a)).json().message;
      expect(first).toMatchObject({ status: 'read', updatedAt: T0 + 7001 });
      expect(first.statuses).toEqual([
        { status: 'delivered', timestamp: T0 + 2000, receivedAt: T0 + 7002 },
        { status: 'read', timestamp: T0 + 3000, receivedAt: T0 + 7001 },
      ]);
      const second = (await getMessage(b)).json().message;
      const error = { code: 131026, message: 'Receiver is incapable of receiving this message' };
      expect(second).toMatchObject({ status: 'failed', updatedAt: T0 + 7004, error });
      expect(second.statuses).toEqual([
        { status: 'sent', timestamp: T0 + 1000, receivedAt: T0 + 7002 },
        { status: 'failed', timestamp: T0 + 2000, receivedAt: T0 + 7004, error },
      ]);
      // message.status: one per status recorded, to the agent's endpoint only.
      const raised = async (endpointId: string) =>
        (
          await t.ctx.db
            .selectFrom('event_deliveries')
            .select('payload')
            .where('endpoint_id', '=', endpointId)
            .execute()
        )
          .map((r) => JSON.parse(r.payload).data)
          .sort((x, y) => `${x.messageId}${x.status}`.localeCompare(`${y.messageId}${y.status}`));
      const expected = [
        { messageId: a, status: 'delivered' },
        { messageId: a, status: 'read' },
        { messageId: b, status: 'failed', error },
        { messageId: b, status: 'sent' },
      ].sort((x, y) => `${x.messageId}${x.status}`.localeCompare(`${y.messageId}${y.status}`));
      expect(await raised(mine.id)).toEqual(expected.map((e) => expect.objectContaining(e)));
      expect(await raised(others.id)).toEqual([]);

      // Two batches over the same messages at once, in opposite orders: both finish, nothing twice.
      const c = await sendOne();
      const [x, y] = await Promise.all([
        t.ctx.messaging.webhooks.applyStatusBatch([
          job('job_x1', T0 + 8001, [{ id: a, status: 'delivered', timestamp: T0 + 2000 }]),
          job('job_x2', T0 + 8002, [{ id: c, status: 'delivered', timestamp: T0 + 2000 }]),
        ]),
        t.ctx.messaging.webhooks.applyStatusBatch([
          job('job_y1', T0 + 8003, [{ id: c, status: 'read', timestamp: T0 + 3000 }]),
          job('job_y2', T0 + 8004, [{ id: a, status: 'sent', timestamp: T0 + 1000 }]),
        ]),
      ]);
      expect([x.sort(), y.sort()]).toEqual([
        ['job_x1', 'job_x2'],
        ['job_y1', 'job_y2'],
      ]);
      expect((await getMessage(c)).json().message).toMatchObject({ status: 'read' });
      const again = (await getMessage(a)).json().message;
      expect(again.status).toBe('read');
      expect(again.statuses.map((s: { status: string }) => s.status)).toEqual(['sent', 'delivered', 'read']);
      expect((await raised(mine.id)).filter((e) => e.messageId === a).map((e) => e.status)).toEqual([
        'delivered',
        'read',
        'sent',
      ]);
    } finally {
      await t.ctx.db.deleteFrom('event_endpoints').where('id', 'in', [mine.id, others.id]).execute();
    }
  });

  it('bodies left unprocessed by an earlier version are applied at the next start', async () => {
    const id = await sendOne();
    // As migration 0016 leaves the bodies a crash of a version with an in-memory queue left:
    // acknowledged to the provider, never processed, now dead letters never attempted.
    const body = JSON.stringify(statusPayload(pid(), [{ id, status: 'read', timestamp: T0 + 5000 }]));
    const leftover = (id: string, raw: string) => ({
      id,
      queue: PROVIDER_WEBHOOK_QUEUE,
      payload: JSON.stringify({ raw, receivedAt: T0 }),
      attempts: 0,
      last_error: 'acknowledged but not applied before an earlier version stopped; the next start applies it',
      failed_at: T0,
    });
    await t.ctx.db
      .insertInto('job_dead_letters')
      .values([leftover('evt_leftover', body), leftover('evt_garbage', 'not json')])
      .execute();
    expect(await t.ctx.messaging.webhooks.recover()).toBe(2);
    await t.ctx.messaging.webhooks.idle();
    const message = (await getMessage(id)).json().message;
    expect(message.status).toBe('read');
    expect(message.statuses.map((s: { status: string }) => s.status)).toEqual(['read']);
    expect(await t.ctx.db.selectFrom('job_dead_letters').selectAll().where('attempts', '=', 0).execute()).toEqual([]);
    expect(await storedWebhooks(t)).toEqual([]);
  });

  it('read without delivered is fine; a late sent does not undo read', async () => {
    const id = await sendOne();
    await post(statusPayload(pid(), [{ id, status: 'read', timestamp: T0 + 2000 }]));
    await post(statusPayload(pid(), [{ id, status: 'sent', timestamp: T0 + 1000 }]));
    const message = (await getMessage(id)).json().message;
    expect(message.status).toBe('read');
    expect(message.statuses.map((s: { status: string }) => s.status)).toEqual(['sent', 'read']);
  });

  it('failed is final and carries its error', async () => {
    const id = await sendOne();
    await post(statusPayload(pid(), [{ id, status: 'sent', timestamp: T0 + 1000 }]));
    await post(
      statusPayload(pid(), [
        {
          id,
          status: 'failed',
          timestamp: T0 + 2000,
          errors: [
            {
              code: 131026,
              title: 'Message undeliverable',
              message: 'Message undeliverable',
              error_data: { details: 'Receiver is incapable of receiving this message' },
            },
          ],
        },
      ]),
    );
    await post(statusPayload(pid(), [{ id, status: 'delivered', timestamp: T0 + 3000 }]));
    const message = (await getMessage(id)).json().message;
    expect(message.status).toBe('failed');
    expect(message.error).toEqual({ code: 131026, message: 'Receiver is incapable of receiving this message' });
    const failed = message.statuses.find((s: { status: string }) => s.status === 'failed');
    expect(failed.error).toEqual({ code: 131026, message: 'Receiver is incapable of receiving this message' });
  });

  it('handles every entry, change and status of one webhook', async () => {
    const a = await sendOne();
    const b = await sendOne();
    const one = statusPayload(pid(), [{ id: a, status: 'delivered', timestamp: T0 }]);
    const two = statusPayload(pid(), [
      { id: b, status: 'sent', timestamp: T0 },
      { id: b, status: 'delivered', timestamp: T0 + 1000 },
    ]);
    const both = {
      object: 'whatsapp_business_account',
      entry: [
        { id: 'w1', changes: [...changesOf(one), ...changesOf(two)] },
        { id: 'w2', changes: changesOf(statusPayload(pid(), [{ id: a, status: 'read', timestamp: T0 + 5000 }])) },
      ],
    };
    const res = await post(both);
    expect(res.json()).toEqual({ received: 4 });
    expect((await getMessage(a)).json().message.status).toBe('read');
    expect((await getMessage(b)).json().message.status).toBe('delivered');
  });

  it('an inbound message is processed once however often it is delivered', async () => {
    const from = randomPhone();
    const payload = inboundPayload(pid(), from, `wamid.dup${Date.now()}`, 'hello', 'Ada', T0);
    expect((await post(payload)).statusCode).toBe(200);
    expect((await post(payload)).statusCode).toBe(200);
    const rows = await t.ctx.db
      .selectFrom('inbound_messages')
      .select('from_phone')
      .where('from_phone', '=', from)
      .execute();
    expect(rows).toHaveLength(1);
    const users = await t.ctx.db.selectFrom('end_users').select(['origin']).where('phone', '=', from).execute();
    expect(users).toEqual([{ origin: 'inbound' }]);
  });

  it('an inbound message for an unknown number, or for none, is kept unrouted; adding the number replays it', async () => {
    const before = await t.ctx.db.selectFrom('webhook_unrouted').select('id').execute();
    const phoneNumberId = String(Date.now()).slice(-12);
    const from = randomPhone();
    const id = `wamid.unknown${Date.now()}`;
    const stranger = signedWebhook(t.ctx.messaging.appSecret, inboundPayload(phoneNumberId, from, id, 'hi', 'Ada', T0));
    const ack = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: stranger.headers,
      payload: stranger.body,
    });
    expect(ack.statusCode).toBe(200);
    expect(ack.json()).toEqual({ received: 1 });
    await t.ctx.messaging.webhooks.idle();
    const withMetadata = inboundPayload(pid(), randomPhone(), `wamid.nometa${Date.now()}`, 'hi');
    const noMetadata = {
      ...withMetadata,
      entry: withMetadata.entry.map((e) => ({
        ...e,
        changes: e.changes.map(({ value: { metadata: _metadata, ...value }, ...change }) => ({ ...change, value })),
      })),
    };
    expect((await post(noMetadata)).statusCode).toBe(200);

    const kept = (await storedWebhooks(t)).filter((r) => !before.some((b) => b.id === r.id));
    expect(kept).toHaveLength(2);
    expect(kept[0]).toMatchObject({
      state: 'unrouted',
      body: stranger.body,
      phone_number_ids: `,${phoneNumberId},`,
      last_error: `unknown number: no messaging number has phone number ID '${phoneNumberId}'`,
    });
    expect(kept[1]).toMatchObject({ state: 'unrouted', phone_number_ids: ',,' });
    expect(
      await t.ctx.db.selectFrom('inbound_messages').selectAll().where('provider_message_id', '=', id).execute(),
    ).toEqual([]);
    // A restart does not replay it (it is not live) and is not blocked by it.
    expect(await t.ctx.messaging.webhooks.recover()).toBe(0);

    // The operator adds the number: the stored message is applied (stored, window opened, end user).
    const added = await runCli(
      [
        'number',
        'add',
        '--org',
        tenant.org.id,
        '--phone',
        randomPhone(),
        '--provider',
        'cloud',
        '--phone-number-id',
        phoneNumberId,
        '--access-token-env',
        'TEST_TOKEN',
        '--json',
      ],
      { ...t.env, TEST_TOKEN: 'EAAG-test' },
    );
    expect(added.code).toBe(0);
    expect(added.json()).toMatchObject({ phoneNumberId, replayedWebhooks: 1 });
    const inbound = await t.ctx.db
      .selectFrom('inbound_messages')
      .selectAll()
      .where('provider_message_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(inbound).toMatchObject({ from_phone: from, org_id: tenant.org.id, text: 'hi', sent_at: T0 });
    const window = await t.ctx.db
      .selectFrom('messaging_windows')
      .selectAll()
      .where('number_id', '=', inbound.number_id)
      .execute();
    expect(window).toEqual([{ number_id: inbound.number_id, user_phone: from, last_inbound_at: T0 }]);
    expect(await endUsersWithPhone(t, tenant.org.id, from, ['origin'])).toEqual([{ origin: 'inbound' }]);
    const left = await storedWebhooks(t);
    expect(left.map((r) => r.id)).not.toContain(kept[0]?.id);
    expect(left.map((r) => r.id)).toContain(kept[1]?.id);
  });

  it('odd but well-signed values are applied or skipped item by item, never failing the body', async () => {
    const id = await sendOne();
    const good = `wamid.odd${Date.now()}`;
    const payload = {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: 'waba',
          changes: [
            {
              field: 'messages',
              value: {
                metadata: { display_phone_number: '16505550000', phone_number_id: pid() },
                contacts: [{ profile: { name: 'Nul\u0000Name' }, wa_id: '16505550177' }],
                messages: [
                  { from: 'abc', id: `${good}.a`, timestamp: String(T0 / 1000), type: 'text', text: { body: 'x' } },
                  { from: '999', id: `${good}.b`, timestamp: String(T0 / 1000), type: 'text', text: { body: 'x' } },
                  {
                    from: '16505550177',
                    id: good,
                    timestamp: '99999999999999999',
                    type: 'text',
                    text: { body: 'a\u0000b' },
                  },
                ],
                statuses: [
                  { id, status: 'sent', timestamp: '99999999999999999', errors: [{ code: 1.5 }] },
                  { id, status: 'failed', timestamp: '-5', errors: [{ code: 99999999999, title: 'huge' }] },
                  { id, status: 'exploded', timestamp: String(T0 / 1000) },
                ],
              },
            },
          ],
        },
      ],
    };
    const res = await post(payload);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ received: 3 });
    expect(
      (await t.ctx.jobs.counts()).filter(
        (c) => c.queue === PROVIDER_WEBHOOK_QUEUE && c.state !== 'dead' && c.count > 0,
      ),
    ).toEqual([]);
    expect((await storedWebhooks(t)).filter((r) => r.body.includes(good))).toEqual([]);
    const inbound = await t.ctx.db
      .selectFrom('inbound_messages')
      .selectAll()
      .where('provider_message_id', 'like', `${good}%`)
      .execute();
    expect(inbound).toEqual([
      expect.objectContaining({ provider_message_id: good, from_phone: '+16505550177', text: 'ab', sent_at: T0 }),
    ]);
    const user = await t.ctx.db
      .selectFrom('end_users')
      .select('name')
      .where('org_id', '=', tenant.org.id)
      .where('phone', '=', '+16505550177')
      .executeTakeFirstOrThrow();
    expect(user.name).toBe('NulName');
    const message = (await getMessage(id)).json().message;
    expect(message.status).toBe('failed');
    expect(message.statuses).toEqual([
      { status: 'sent', timestamp: T0, receivedAt: T0 },
      { status: 'failed', timestamp: T0, receivedAt: T0, error: { code: null, message: 'huge' } },
    ]);
  });

  it('work that keeps failing is retried, then kept as failed (listed, never blocking a start) and replayable', async () => {
    t.ctx.messaging.webhooks.retryDelaysMs = [20, 20];
    const from = randomPhone();
    const restore = await failWrites(t, 'inbound_messages', 'INSERT', { column: 'from_phone', value: from });
    const id = `wamid.fails${Date.now()}`;
    let kept: Awaited<ReturnType<typeof storedWebhooks>>;
    try {
      const res = await post(inboundPayload(pid(), from, id, 'will fail', 'Ada', T0));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ received: 1 });
      kept = (await storedWebhooks(t)).filter((r) => r.body.includes(id));
      expect(kept).toEqual([
        expect.objectContaining({
          state: 'failed',
          attempts: 3,
          last_error: expect.stringContaining('injected failure'),
        }),
      ]);
      expect(
        await t.ctx.db.selectFrom('inbound_messages').selectAll().where('provider_message_id', '=', id).execute(),
      ).toEqual([]);
      // Out of the live queue: a start does not replay it (so it cannot fail every start).
      expect(await t.ctx.messaging.webhooks.recover()).toBe(0);
      const listed = await runCli(['webhooks', 'failed', '--json'], t.env);
      expect(listed.code).toBe(0);
      expect(listed.json<{ id: string }[]>().find((w) => w.id === kept[0]?.id)).toEqual({
        id: kept[0]?.id,
        state: 'failed',
        receivedAt: T0,
        failedAt: T0,
        attempts: 3,
        error: expect.stringContaining('injected failure'),
        phoneNumberIds: [],
        items: 1,
      });
      const table = await runCli(['webhooks', 'failed'], t.env);
      expect(table.stdout).toContain(kept[0]?.id);
    } finally {
      await restore();
      t.ctx.messaging.webhooks.retryDelaysMs = [500, 2000, 8000, 30000];
    }
    // The real binary, as users run it (the other commands run in a thread: test/helpers/cli.ts).
    const retried = await runCliProcess(['webhooks', 'retry', '--id', kept[0]?.id ?? '', '--json'], t.env);
    expect(retried.code).toBe(0);
    expect(retried.json()).toMatchObject({ replayed: 1, applied: 1, failed: 0, unrouted: 0 });
    expect(
      await t.ctx.db.selectFrom('inbound_messages').select('text').where('provider_message_id', '=', id).execute(),
    ).toEqual([{ text: 'will fail' }]);
    expect(
      await t.ctx.db.selectFrom('messaging_windows').select('user_phone').where('user_phone', '=', from).execute(),
    ).toEqual([{ user_phone: from }]);
    expect(await endUsersWithPhone(t, tenant.org.id, from, ['phone'])).toEqual([{ phone: from }]);
    expect((await storedWebhooks(t)).filter((r) => r.body.includes(id))).toEqual([]);
    const unknown = await runCli(['webhooks', 'retry', '--id', 'evt_nope'], t.env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no failed or unrouted webhook "evt_nope"/);
  });

  it("statuses are scoped by the number the webhook names: another number's status never moves a message", async () => {
    const id = await sendOne();
    const stranger = await makeSendingTenant(t.ctx);
    await post(statusPayload(stranger.number.phoneNumberId, [{ id, status: 'read', timestamp: T0 + 1000 }]));
    const untouched = (await getMessage(id)).json().message;
    expect(untouched.status).toBe('accepted');
    expect(untouched.statuses).toEqual([]);
    const pending = await t.ctx.db
      .selectFrom('pending_statuses')
      .selectAll()
      .where('provider_message_id', '=', id)
      .execute();
    expect(pending).toEqual([
      expect.objectContaining({ status: 'read', phone_number_id: stranger.number.phoneNumberId }),
    ]);
    await post(statusPayload(pid(), [{ id, status: 'delivered', timestamp: T0 + 2000 }]));
    expect((await getMessage(id)).json().message.status).toBe('delivered');
  });

  it('checks the signature first: an unsigned request is 401 even when empty; a signed empty one is 400', async () => {
    const bare = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp' });
    expect(bare.statusCode).toBe(401);
    expect(bare.json()).toEqual({ error: 'Missing or invalid X-Hub-Signature-256.', code: 'UNAUTHORIZED' });
    const emptyJson = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: { 'content-type': 'application/json' },
      payload: '',
    });
    expect(emptyJson.statusCode).toBe(401);
    const signedEmpty = await t.app.inject({
      method: 'POST',
      url: '/webhooks/msgapp',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signBody(t.ctx.messaging.appSecret, '') },
      payload: '',
    });
    expect(signedEmpty.statusCode).toBe(400);
    expect(signedEmpty.json()).toEqual({ error: 'The webhook body is empty.', code: 'INVALID_BODY' });
  });

  it('documents the webhook body and its signature check in /api/openapi.json', () => {
    const doc = openApiDocument(t.app);
    const op = doc.paths['/webhooks/msgapp']?.post;
    expect(op?.requestBody).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ProviderWebhook' } } },
    });
    expect(doc.components?.schemas?.ProviderWebhook).toMatchObject({
      type: 'object',
      properties: { entry: { type: 'array' } },
    });
    // The description names first the code the answer carries (http/errors.ts, codedDescription).
    expect(op?.responses?.['401']?.description).toBe(
      'UNAUTHORIZED: missing or invalid X-Hub-Signature-256 (HMAC-SHA256 of the raw body with the app secret).',
    );
  });

  it('GET /api/messages: same scope rules as a send; other organizations see nothing', async () => {
    const id = await sendOne();
    expect((await getMessage(id, tenant.orgKey.auth)).statusCode).toBe(200);
    const forbidden = await getMessage(id, tenant.otherKey.auth);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json()).toEqual({ success: false, error: 'This API key is bound to another agent.' });
    const stranger = await makeSendingTenant(t.ctx);
    const notFound = await getMessage(id, stranger.orgKey.auth);
    expect(notFound.statusCode).toBe(404);
    expect(notFound.json()).toEqual({ success: false, error: `No message with ID '${id}' in this organization.` });
    expectMatchesContract(t.app, 'GET', '/api/messages/{messageId}', notFound);
    expect((await getMessage('wamid.nothing')).statusCode).toBe(404);
    expect((await getMessage(id, {})).statusCode).toBe(401);
    const noChannels = await makeKey(t.ctx, tenant.org.id, { permissions: ['endusers'] });
    expect((await getMessage(id, noChannels.auth)).statusCode).toBe(403);
    // Parley's own message ID works too.
    const own = (await getMessage(id)).json().message.id as string;
    expect((await getMessage(own)).json().message.messageId).toBe(id);
  });
});

describe.each(DIALECTS)('statuses from the sandbox (%s)', (dialect) => {
  it('a send is followed by signed sent, delivered and read webhooks', async () => {
    const t = await createMessagingApp(dialect);
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: templateSend(),
      });
      await t.settle();
      const got = await t.app.inject({
        method: 'GET',
        url: `/api/messages/${res.json().messageId}`,
        headers: tenant.agentKey.auth,
      });
      const message = got.json().message;
      expect(message.status).toBe('read');
      expect(message.statuses.map((s: { status: string }) => s.status)).toEqual(['sent', 'delivered', 'read']);
    } finally {
      await t.close();
    }
  });
});

/** An endpoint for `message.status` that is never reached (nothing listens there): a test reads what was raised for it. */
function unreachedStatusEndpoint(t: TestApp, orgId: string) {
  return createEndpoint(t.ctx, { orgId, url: 'https://127.0.0.1:9/', events: 'message.status' });
}

describe.each(DIALECTS)('a status before its message is stored (%s)', (dialect) => {
  it('is kept and applied when the message is stored', async () => {
    const provider = await startFakeProvider(() => ({
      status: 200,
      body: { messaging_product: 'whatsapp', messages: [{ id: 'wamid.EARLY1' }] },
    }));
    const t = await createQuietTestApp(dialect, { env: { PARLEY_PROVIDER_BASE_URL: provider.url } });
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const endpoint = await unreachedStatusEndpoint(t, tenant.org.id);
      const early = statusPayload(tenant.number.phoneNumberId, [
        { id: 'wamid.EARLY1', status: 'delivered', timestamp: Date.now() },
      ]);
      const { body, headers } = signedWebhook(t.ctx.messaging.appSecret, early);
      const ack = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: body });
      expect(ack.statusCode).toBe(200);
      await t.ctx.messaging.webhooks.idle();
      const before = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.EARLY1',
        headers: tenant.agentKey.auth,
      });
      expect(before.statusCode).toBe(404);

      const sent = await t.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: templateSend(),
      });
      expect(sent.json().messageId).toBe('wamid.EARLY1');
      // Applied just after the send's answer.
      await t.ctx.afterAnswer.idle();
      const after = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.EARLY1',
        headers: tenant.agentKey.auth,
      });
      expect(after.json().message.status).toBe('delivered');
      expect(after.json().message.statuses.map((s: { status: string }) => s.status)).toEqual(['delivered']);
      const left = await t.ctx.db.selectFrom('pending_statuses').selectAll().execute();
      expect(left).toHaveLength(0);
      // The agent is told of the early status too, once the send has its conversation.
      const raised = await t.ctx.db
        .selectFrom('event_deliveries')
        .select('payload')
        .where('endpoint_id', '=', endpoint.id)
        .execute();
      expect(raised.map((r) => JSON.parse(r.payload))).toEqual([
        expect.objectContaining({
          type: 'message.status',
          data: {
            conversationId: sent.json().conversationId,
            agentId: tenant.agent.id,
            messageId: 'wamid.EARLY1',
            status: 'delivered',
          },
        }),
      ]);
    } finally {
      await t.close();
      await provider.close();
    }
  });
});

describe.each(DIALECTS)('statuses racing the send (%s)', (dialect) => {
  it('a status that arrives before the provider has even answered the send is applied to the stored message', async () => {
    let t: TestApp | undefined;
    let phoneNumberId = '';
    // The provider reports "delivered" (with our callback data) before it answers the send.
    const provider = await startFakeProvider(async (body) => {
      if (!t) throw new Error('no app');
      const early = statusPayload(phoneNumberId, [
        {
          id: 'wamid.RACE1',
          status: 'delivered',
          timestamp: Date.now(),
          callback: String(body.biz_opaque_callback_data),
        },
      ]);
      const { body: raw, headers } = signedWebhook(t.ctx.messaging.appSecret, early);
      const ack = await t.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers, payload: raw });
      if (ack.statusCode !== 200) throw new Error(`webhook answered ${ack.statusCode}`);
      await t.ctx.messaging.webhooks.idle();
      return { status: 200, body: { messaging_product: 'whatsapp', messages: [{ id: 'wamid.RACE1' }] } };
    });
    t = await createQuietTestApp(dialect, { env: { PARLEY_PROVIDER_BASE_URL: provider.url } });
    try {
      const tenant = await makeSendingTenant(t.ctx);
      phoneNumberId = tenant.number.phoneNumberId;
      const sent = await t.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: templateSend(),
      });
      expect(sent.json().messageId).toBe('wamid.RACE1');
      const got = await t.app.inject({
        method: 'GET',
        url: '/api/messages/wamid.RACE1',
        headers: tenant.agentKey.auth,
      });
      // `accepted` (the send's own answer) does not undo `delivered`.
      expect(got.json().message.status).toBe('delivered');
      expect(got.json().message.statuses.map((s: { status: string }) => s.status)).toEqual(['delivered']);
    } finally {
      await t.close();
      await provider.close();
    }
  });
});

describe.each(DIALECTS)('pending statuses (%s)', (dialect) => {
  it('are kept for the provider retry horizon (7 days), then deleted', async () => {
    const clock = new ManualClock(T0);
    const t = await createMessagingApp(dialect, { clock, webhooks: false });
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const pnid = tenant.number.phoneNumberId;
      await postWebhook(t, statusPayload(pnid, [{ id: 'wamid.NEVER1', status: 'delivered', timestamp: T0 }]));
      const pending = () =>
        t.ctx.db.selectFrom('pending_statuses').select('provider_message_id').orderBy('provider_message_id').execute();
      expect(await pending()).toEqual([{ provider_message_id: 'wamid.NEVER1' }]);
      clock.advance(6 * DAY);
      await postWebhook(t, statusPayload(pnid, [{ id: 'wamid.NEVER2', status: 'sent', timestamp: clock.now() }]));
      expect(await pending()).toEqual([
        { provider_message_id: 'wamid.NEVER1' },
        { provider_message_id: 'wamid.NEVER2' },
      ]);
      clock.advance(DAY + 60_000);
      await postWebhook(t, statusPayload(pnid, [{ id: 'wamid.NEVER3', status: 'sent', timestamp: clock.now() }]));
      expect(await pending()).toEqual([
        { provider_message_id: 'wamid.NEVER2' },
        { provider_message_id: 'wamid.NEVER3' },
      ]);
    } finally {
      await t.close();
    }
  });
});

describe.each(DIALECTS)('pending statuses of a send that stopped after its acceptance (%s)', (dialect) => {
  it('are applied, and told, by the next node to start, and by a running one within 10 minutes', async () => {
    const clock = new ManualClock(T0);
    const t = await createMessagingApp(dialect, { clock, webhooks: false });
    let again: TestApp | undefined;
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const endpoint = await unreachedStatusEndpoint(t, tenant.org.id);
      const pnid = tenant.number.phoneNumberId;
      // Statuses without our callback data, before their messages have provider IDs: kept as pending.
      await postWebhook(
        t,
        statusPayload(pnid, [
          { id: 'wamid.STOPPED1', status: 'delivered', timestamp: T0 },
          { id: 'wamid.STOPPED2', status: 'read', timestamp: T0 },
          { id: 'wamid.ELSEWHERE', status: 'read', timestamp: T0 },
        ]),
      );
      // Sends whose acceptances were committed, then their process stopped before its work after
      // the answer; and a message of ours the third status's number does not send from.
      const row = (providerMessageId: string, numberId = tenant.number.id) =>
        templateMessageRow({
          orgId: tenant.org.id,
          agentId: tenant.agent.id,
          numberId,
          providerMessageId,
          at: T0,
        });
      const other = await makeNumber(t.ctx, tenant.org.id);
      const [first, second, elsewhere] = [
        row('wamid.STOPPED1'),
        row('wamid.STOPPED2'),
        row('wamid.ELSEWHERE', other.id),
      ];
      // The last in ID order, behind more messages of the other number than one read takes, each
      // with a status reported for this number: those never keep it from being found.
      second.id = `msg_${'z'.repeat(16)}`;
      const crowd = Array.from({ length: 120 }, (_, i) => row(`wamid.CROWD${i}`, other.id));
      await t.ctx.db
        .insertInto('messages')
        .values([first, second, elsewhere, ...crowd])
        .execute();
      await t.ctx.db
        .insertInto('pending_statuses')
        .values(
          crowd.map((m) => ({
            provider_message_id: m.provider_message_id as string,
            phone_number_id: pnid,
            status: 'sent',
            occurred_at: T0,
            received_at: T0,
            error_code: null,
            error_message: null,
          })),
        )
        .execute();
      const statusOf = async (id: string) =>
        (await t.ctx.db.selectFrom('messages').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
      const pending = () =>
        t.ctx.db.selectFrom('pending_statuses').select('provider_message_id').orderBy('provider_message_id').execute();
      expect(await statusOf(first.id)).toBe('accepted');

      // A node starting on the same database applies what it finds for the message's own number.
      again = await createQuietTestApp(dialect, { shareWith: t, clock, workJobs: false });
      await again.ctx.messaging.webhooks.recover();
      expect(await statusOf(first.id)).toBe('delivered');
      expect(await statusOf(second.id)).toBe('read');
      expect(await statusOf(elsewhere.id)).toBe('accepted');
      expect((await pending()).filter((p) => !p.provider_message_id.startsWith('wamid.CROWD'))).toEqual([
        { provider_message_id: 'wamid.ELSEWHERE' },
      ]);
      expect(await pending()).toHaveLength(121);
      const history = await t.ctx.db
        .selectFrom('message_statuses')
        .select(['message_id', 'status'])
        .orderBy('status')
        .execute();
      expect(history).toEqual([
        { message_id: first.id, status: 'delivered' },
        { message_id: second.id, status: 'read' },
      ]);
      const told = await t.ctx.db
        .selectFrom('event_deliveries')
        .select('payload')
        .where('endpoint_id', '=', endpoint.id)
        .execute();
      expect(
        told
          .map((r) => JSON.parse(r.payload).data)
          .map((d: { messageId: string; status: string }) => `${d.messageId} ${d.status}`)
          .sort(),
      ).toEqual(['wamid.STOPPED1 delivered', 'wamid.STOPPED2 read']);

      // A running node does the same at most every 10 minutes, as statuses come in.
      await postWebhook(t, statusPayload(pnid, [{ id: 'wamid.STOPPED3', status: 'sent', timestamp: T0 }]));
      const third = row('wamid.STOPPED3');
      await t.ctx.db.insertInto('messages').values(third).execute();
      await postWebhook(t, statusPayload(pnid, [{ id: 'wamid.UNRELATED', status: 'sent', timestamp: T0 }]));
      expect(await statusOf(third.id)).toBe('accepted');
      clock.advance(10 * 60 * 1000);
      await postWebhook(t, statusPayload(pnid, [{ id: 'wamid.UNRELATED2', status: 'sent', timestamp: clock.now() }]));
      expect(await statusOf(third.id)).toBe('sent');
    } finally {
      await again?.close();
      await t.close();
    }
  });
});

describe.each(DIALECTS)('request logs of the webhook routes (%s)', (dialect) => {
  it('never carry the verify token', async () => {
    const lines: string[] = [];
    const dataDir = mkdtempSync(join(tmpdir(), 'fixmsg-logs-'));
    const schema = `t_${randomBase62(12).toLowerCase()}`;
    const env: Record<string, string> = {
      PARLEY_DATA_DIR: dataDir,
      PARLEY_WEBHOOK_VERIFY_TOKEN: 'sekret-verify-token',
      LOG_LEVEL: 'info',
      ...(dialect === 'postgres' && PG_URL ? { DATABASE_URL: PG_URL, PARLEY_PG_SCHEMA: schema, ...PG_SECRETS } : {}),
    };
    const config = loadConfig({}, env);
    const region = config.regions[0];
    if (!region) throw new Error('no region');
    const logger = pino(
      { level: 'info' },
      new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) }),
    );
    const ctx = await createContext(config, region, { logger });
    const app = await buildApp(ctx, { logRequests: true });
    try {
      const ok = await app.inject({
        method: 'GET',
        url: '/webhooks/msgapp?hub.mode=subscribe&hub.verify_token=sekret-verify-token&hub.challenge=42',
      });
      expect(ok.statusCode).toBe(200);
      const wrong = await app.inject({
        method: 'GET',
        url: '/webhooks/msgapp?hub.verify_token=sekret-guess&hub.mode=subscribe',
      });
      expect(wrong.statusCode).toBe(403);
      // One line per request, written once it is answered.
      const requests = lines.filter((l) => l.includes('request completed'));
      expect(requests).toHaveLength(2);
      expect(lines.filter((l) => l.includes('incoming request'))).toHaveLength(0);
      expect(JSON.parse(requests[0] ?? '{}')).toMatchObject({ res: { statusCode: 200 }, reqId: expect.any(String) });
      expect(JSON.parse(requests[0] ?? '{}').req.url).toBe(
        '/webhooks/msgapp?hub.mode=subscribe&hub.verify_token=[redacted]&hub.challenge=42',
      );
      expect(lines.join('')).not.toContain('sekret');
    } finally {
      await app.close();
      await ctx.close();
      if (dialect === 'postgres' && PG_URL) await dropPostgresSchema(PG_URL, schema);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
