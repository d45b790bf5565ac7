import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_WEBHOOK_QUEUE } from '../../src/messaging/webhook.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { freePort, startServe } from '../helpers/cli.js';
import {
  failWrites,
  inboundPayload,
  makeSendingTenant,
  randomPhone,
  signedWebhook,
  statusPayload,
  templateMessageRow,
} from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

/**
 * The embedded default: jobs in the SQLite database of the one serving process. A `parley serve`
 * killed with SIGKILL while a provider webhook waits for its retry keeps the job, and the next
 * start applies it.
 */
describe('jobs survive kill -9 (SQLite)', () => {
  let setup: TestApp;

  beforeAll(async () => {
    // The test's own view of the server's data folder; it works no jobs itself.
    setup = await createTestApp('sqlite', { workJobs: false });
  });
  afterAll(async () => {
    await setup.close();
  });

  /**
   * Posts a signed webhook to the server, waits until its job's first attempt has failed (the test's
   * injected failure) and it waits for its retry, then kills the server with SIGKILL.
   */
  async function postThenKillAfterFirstFailure(
    server: Awaited<ReturnType<typeof startServe>>,
    port: number,
    body: string,
    headers: Record<string, string>,
  ): Promise<void> {
    const ack = await fetch(`http://127.0.0.1:${port}/webhooks/msgapp`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body,
    });
    expect(ack.status).toBe(200);
    await until(async () => {
      const job = await setup.ctx.db
        .selectFrom('jobs')
        .select('attempt')
        .where('queue', '=', PROVIDER_WEBHOOK_QUEUE)
        .executeTakeFirst();
      return (job?.attempt ?? 0) >= 2;
    }, 'the first attempt to fail');
    server.child.kill('SIGKILL');
    await server.stop();
  }

  it('a webhook acknowledged before the kill is applied after the restart', async () => {
    const { number } = await makeSendingTenant(setup.ctx);
    const from = randomPhone();
    const messageId = `wamid.durable${randomBase62(8)}`;
    const env = { ...setup.env, PARLEY_JOB_POLL_MS: '50' };
    const port = await freePort();
    const restore = await failWrites(setup, 'inbound_messages', 'INSERT', { column: 'from_phone', value: from });
    let server = await startServe(['--port', String(port)], env);
    try {
      const { body, headers } = signedWebhook(
        setup.ctx.messaging.appSecret,
        inboundPayload(number.phoneNumberId, from, messageId, 'still there?'),
      );
      await postThenKillAfterFirstFailure(server, port, body, headers);
    } finally {
      await restore();
    }
    const kept = await setup.ctx.db.selectFrom('jobs').select(['queue']).execute();
    expect(kept).toEqual([{ queue: PROVIDER_WEBHOOK_QUEUE }]);

    server = await startServe(['--port', String(port)], env);
    try {
      await until(
        async () =>
          (
            await setup.ctx.db
              .selectFrom('inbound_messages')
              .select('provider_message_id')
              .where('provider_message_id', '=', messageId)
              .execute()
          ).length === 1,
        'the restarted server to apply the webhook',
      );
      const stored = await setup.ctx.db
        .selectFrom('inbound_messages')
        .select(['from_phone', 'text'])
        .where('provider_message_id', '=', messageId)
        .execute();
      expect(stored).toEqual([{ from_phone: from, text: 'still there?' }]);
      await until(async () => (await setup.ctx.db.selectFrom('jobs').select('id').execute()).length === 0, 'the job');
    } finally {
      await server.stop();
    }
  });

  it('a status webhook whose batch failed, acknowledged before the kill, is applied after the restart', async () => {
    const tenant = await makeSendingTenant(setup.ctx);
    const now = Date.now();
    const wamid = `wamid.durable${randomBase62(8)}`;
    const row = templateMessageRow({
      orgId: tenant.org.id,
      agentId: tenant.agent.id,
      numberId: tenant.number.id,
      providerMessageId: wamid,
      at: now,
    });
    const { id } = row;
    await setup.ctx.db.insertInto('messages').values(row).execute();
    const env = { ...setup.env, PARLEY_JOB_POLL_MS: '50' };
    const port = await freePort();
    // The batch fails (and rolls back), then the body on its own: the job waits for its retry.
    const restore = await failWrites(setup, 'message_statuses', 'INSERT', { column: 'message_id', value: id });
    let server = await startServe(['--port', String(port)], env);
    try {
      const { body, headers } = signedWebhook(
        setup.ctx.messaging.appSecret,
        statusPayload(tenant.number.phoneNumberId, [{ id: wamid, status: 'read', timestamp: now }]),
      );
      await postThenKillAfterFirstFailure(server, port, body, headers);
    } finally {
      await restore();
    }
    const message = () =>
      setup.ctx.db.selectFrom('messages').select('status').where('id', '=', id).executeTakeFirstOrThrow();
    expect(await message()).toEqual({ status: 'accepted' });
    expect(await setup.ctx.db.selectFrom('jobs').select(['queue']).execute()).toEqual([
      { queue: PROVIDER_WEBHOOK_QUEUE },
    ]);

    server = await startServe(['--port', String(port)], env);
    try {
      await until(async () => (await message()).status === 'read', 'the restarted server to apply the status');
      const recorded = await setup.ctx.db
        .selectFrom('message_statuses')
        .select(['status'])
        .where('message_id', '=', id)
        .execute();
      expect(recorded).toEqual([{ status: 'read' }]);
      await until(async () => (await setup.ctx.db.selectFrom('jobs').select('id').execute()).length === 0, 'the job');
    } finally {
      await server.stop();
    }
  });
});
