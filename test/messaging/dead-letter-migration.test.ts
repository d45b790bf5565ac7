import { type Kysely, Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { PROVIDER_WEBHOOK_QUEUE } from '../../src/messaging/webhook.service.js';
import { DIALECTS } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import {
  createMessagingApp,
  inboundPayload,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  statusPayload,
  templateSend,
} from '../helpers/messaging.js';

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);

/**
 * Migration 0016: the failed provider webhooks kept in `webhook_inbox` become dead letters of the
 * job runner, replayable by `parley jobs replay`; unrouted ones move to `webhook_unrouted`; live
 * ones are applied at the next start; `webhook_inbox` is gone. Rows are written as the version
 * before it stored them, with the database migrated back to 0015.
 */
describe.each(DIALECTS)('one dead-letter store: migration 0016 (%s)', (dialect) => {
  let t: MessagingTestApp;
  let tenant: Awaited<ReturnType<typeof makeSendingTenant>>;
  let migrator: Migrator;
  let schema: string | undefined;
  beforeAll(async () => {
    t = await createMessagingApp(dialect, { webhooks: false });
    tenant = await makeSendingTenant(t.ctx);
    schema =
      dialect === 'postgres'
        ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(t.ctx.db)).rows[0]?.schema
        : undefined;
    migrator = new Migrator({
      db: t.ctx.db,
      provider: migrationProvider,
      ...(schema ? { migrationTableSchema: schema } : {}),
    });
  });
  afterAll(async () => {
    await t.close();
  });

  // biome-ignore lint/suspicious/noExplicitAny: the table of the version before 0016 is not in the typed schema.
  const untyped = () => t.ctx.db as unknown as Kysely<any>;

  it('moves failed bodies to the dead letters (kept as they were, replayable), unrouted and live ones to their homes', async () => {
    // A message sent by this version first: the app reads tables of later migrations.
    const send = await t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: tenant.agentKey.auth,
      payload: templateSend(),
    });
    expect(send.statusCode).toBe(200);
    const sent = send.json().messageId as string;

    const down = await migrator.migrateTo('0015-status-history');
    expect(down.error).toBeUndefined();
    // Later migrations go down first; 0016 last.
    expect(down.results?.map((r) => [r.migrationName, r.direction]).at(-1)).toEqual([
      '0016-one-dead-letter-store',
      'Down',
    ]);
    const from = randomPhone();
    const failedId = `wamid.migrated${Date.now()}`;
    const failedBody = JSON.stringify(inboundPayload(tenant.number.phoneNumberId, from, failedId, 'kept', 'Ada', T0));
    const unroutedBody = JSON.stringify(inboundPayload('123456789', randomPhone(), `wamid.nowhere${Date.now()}`, 'x'));
    const liveBody = JSON.stringify(
      statusPayload(tenant.number.phoneNumberId, [{ id: sent, status: 'read', timestamp: T0 + 5000 }]),
    );
    await untyped()
      .insertInto('webhook_inbox')
      .values([
        {
          id: 'job_failedbody',
          body: failedBody,
          received_at: T0,
          state: 'failed',
          attempts: 5,
          last_error: 'injected failure',
          failed_at: T0 + 40_000,
          phone_number_ids: null,
        },
        {
          id: 'job_unroutedbody',
          body: unroutedBody,
          received_at: T0 + 1,
          state: 'unrouted',
          attempts: 1,
          last_error: "unknown number: no messaging number has phone number ID '123456789'",
          failed_at: T0 + 2,
          phone_number_ids: ',123456789,',
        },
        {
          id: 'evt_livebody',
          body: liveBody,
          received_at: T0 + 3,
          state: 'live',
          attempts: 0,
          last_error: null,
          failed_at: null,
          phone_number_ids: null,
        },
      ])
      .execute();

    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
    expect(up.results?.map((r) => r.migrationName)[0]).toBe('0016-one-dead-letter-store');
    const tables = (await t.ctx.db.introspection.getTables()).filter((x) => x.schema === schema);
    expect(tables.map((x) => x.name)).toContain('webhook_unrouted');
    expect(tables.map((x) => x.name)).not.toContain('webhook_inbox');

    // The failed body: a dead letter of the provider-webhook queue, as it was stored.
    const dead = await t.ctx.jobs.listDead(PROVIDER_WEBHOOK_QUEUE);
    expect(dead.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      expect.objectContaining({ id: 'evt_livebody', attempts: 0, payload: { raw: liveBody, receivedAt: T0 + 3 } }),
      {
        id: 'job_failedbody',
        queue: PROVIDER_WEBHOOK_QUEUE,
        payload: { raw: failedBody, receivedAt: T0 },
        attempts: 5,
        error: 'injected failure',
        failedAt: T0 + 40_000,
      },
    ]);
    expect(await t.ctx.db.selectFrom('webhook_unrouted').selectAll().execute()).toEqual([
      {
        id: 'job_unroutedbody',
        body: unroutedBody,
        received_at: T0 + 1,
        attempts: 1,
        last_error: "unknown number: no messaging number has phone number ID '123456789'",
        kept_at: T0 + 2,
        phone_number_ids: ',123456789,',
      },
    ]);

    // The operator's view is as before: both kept bodies, the failed one with its attempts and error.
    const listed = await runCli(['webhooks', 'failed', '--json'], t.env);
    expect(listed.code).toBe(0);
    expect(listed.json()).toEqual([
      {
        id: 'job_failedbody',
        state: 'failed',
        receivedAt: T0,
        failedAt: T0 + 40_000,
        attempts: 5,
        error: 'injected failure',
        phoneNumberIds: [],
        items: 1,
      },
      {
        id: 'job_unroutedbody',
        state: 'unrouted',
        receivedAt: T0 + 1,
        failedAt: T0 + 2,
        attempts: 1,
        error: "unknown number: no messaging number has phone number ID '123456789'",
        phoneNumberIds: ['123456789'],
        items: 1,
      },
    ]);

    // The live body: applied at the next start.
    expect(await t.ctx.messaging.webhooks.recover()).toBe(1);
    await t.ctx.messaging.webhooks.idle();
    const read = await t.app.inject({ method: 'GET', url: `/api/messages/${sent}`, headers: tenant.agentKey.auth });
    expect(read.json().message.status).toBe('read');

    // The failed body: `parley jobs replay` puts it back on its queue, and a running server applies it.
    const replayed = await runCli(['jobs', 'replay', '--id', 'job_failedbody', '--json'], t.env);
    expect(replayed.code).toBe(0);
    expect(replayed.json()).toEqual({ replayed: 1, ids: ['job_failedbody'] });
    t.ctx.jobs.wake(PROVIDER_WEBHOOK_QUEUE);
    await t.ctx.messaging.webhooks.idle();
    expect(
      await t.ctx.db
        .selectFrom('inbound_messages')
        .select(['text', 'from_phone'])
        .where('provider_message_id', '=', failedId)
        .execute(),
    ).toEqual([{ text: 'kept', from_phone: from }]);
    expect(await t.ctx.jobs.listDead(PROVIDER_WEBHOOK_QUEUE)).toEqual([]);
  });

  it('goes down again, moving them all back to webhook_inbox', async () => {
    const body = JSON.stringify(inboundPayload('999', randomPhone(), `wamid.back${Date.now()}`, 'x'));
    await t.ctx.db
      .insertInto('job_dead_letters')
      .values({
        id: 'job_back',
        queue: PROVIDER_WEBHOOK_QUEUE,
        payload: JSON.stringify({ raw: body, receivedAt: T0 }),
        attempts: 3,
        last_error: 'still failing',
        failed_at: T0 + 9,
      })
      .execute();
    const down = await migrator.migrateTo('0015-status-history');
    expect(down.error).toBeUndefined();
    const rows = await untyped()
      .selectFrom('webhook_inbox')
      .select(['id', 'state', 'attempts', 'last_error', 'failed_at', 'body'])
      .orderBy('id')
      .execute();
    expect(
      rows.map((r: Record<string, unknown>) => ({
        ...r,
        attempts: Number(r.attempts),
        failed_at: Number(r.failed_at),
      })),
    ).toEqual([
      { id: 'job_back', state: 'failed', attempts: 3, last_error: 'still failing', failed_at: T0 + 9, body },
      expect.objectContaining({ id: 'job_unroutedbody', state: 'unrouted' }),
    ]);
    expect(await t.ctx.jobs.listDead(PROVIDER_WEBHOOK_QUEUE)).toEqual([]);
    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
    expect((await t.ctx.jobs.listDead(PROVIDER_WEBHOOK_QUEUE)).map((d) => d.id)).toEqual(['job_back']);
  });
});
