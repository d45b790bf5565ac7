import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUICK_WAITS_MS } from '../../src/db/retry.js';
import { MAGIC_NUMBERS } from '../../src/sandbox/index.js';
import { PG_URL } from '../helpers/app.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  templateSend,
} from '../helpers/messaging.js';
import { sandboxLog } from '../helpers/sandbox-log.js';
import { until } from '../helpers/wait.js';

const SEND = '/api/channels/send';

/**
 * A send whose writes lose their connection (PostgreSQL only: a connection lost in the middle of a
 * statement is PostgreSQL's, a backend terminated, a restart, a failover; SQLite has none to lose).
 *
 * The database itself ends the connection at the exact statement: a trigger terminates its own
 * backend when a planned write runs, as many times as planned: the outcome of an idempotency key
 * (an UPDATE to `done`), its claim released (a DELETE), or the provider's ID of a message (its
 * acceptance). A sequence counts the attempts, as a sequence survives the rollback of the
 * statement that advanced it. The sandbox sends no status webhooks here: they would bring the
 * provider's ID by another way.
 */
describe.skipIf(!PG_URL)('a send whose writes lose their connection (postgres)', () => {
  let t: MessagingTestApp;
  let planned = 0;
  beforeAll(async () => {
    t = await createMessagingApp('postgres', { webhooks: false });
    await sql`create table lost_connection_plan (key text not null, op text not null, kills int not null, seq text not null)`.execute(
      t.ctx.db,
    );
    await sql`
      create function lose_connection() returns trigger language plpgsql as $$
      declare plan record;
      begin
        if TG_TABLE_NAME = 'messages' then
          select * into plan from lost_connection_plan where key = OLD.to_phone and op = 'ACCEPT';
          if found and (OLD.provider_message_id is not null or NEW.provider_message_id is null) then
            found := false;
          end if;
        else
          select * into plan from lost_connection_plan where key = OLD.key and op = TG_OP;
          if found and TG_OP = 'UPDATE' and NEW.state <> 'done' then
            found := false;
          end if;
        end if;
        if found and nextval(plan.seq::regclass) <= plan.kills then
          perform pg_terminate_backend(pg_backend_pid());
          perform pg_sleep(10);
        end if;
        return case when TG_OP = 'DELETE' then OLD else NEW end;
      end $$`.execute(t.ctx.db);
    await sql`create trigger lose_connection before update or delete on idempotency_keys
      for each row execute function lose_connection()`.execute(t.ctx.db);
    await sql`create trigger lose_connection before update on messages
      for each row execute function lose_connection()`.execute(t.ctx.db);
  });
  afterAll(async () => {
    await t.close();
  });

  /**
   * The next `kills` writes of `op` lose their connection: on `key`'s idempotency record (UPDATE,
   * DELETE), or the acceptance of the message to `key` (ACCEPT). Answers how many were attempted.
   */
  async function loseConnection(key: string, op: 'UPDATE' | 'DELETE' | 'ACCEPT', kills: number) {
    const seq = `lost_connection_${++planned}`;
    await sql`create sequence ${sql.id(seq)}`.execute(t.ctx.db);
    await sql`insert into lost_connection_plan values (${key}, ${op}, ${kills}, ${seq})`.execute(t.ctx.db);
    return async () => {
      const r = await sql<{ n: string }>`select last_value as n from ${sql.id(seq)}`.execute(t.ctx.db);
      return Number(r.rows[0]?.n);
    };
  }

  const send = (auth: Record<string, string>, body: unknown, key: string) =>
    t.app.inject({ method: 'POST', url: SEND, headers: { ...auth, 'idempotency-key': key }, payload: body as object });
  /** Requests to `to` that reached the provider, from its own log. */
  const reachedProvider = async (auth: Record<string, string>, to: string) =>
    (await sandboxLog(t, auth, { to, limit: 200 })).length;
  const stored = async (orgId: string, key: string) =>
    t.ctx.db
      .selectFrom('idempotency_keys')
      .select(['state', 'response_status', 'response_body'])
      .where('org_id', '=', orgId)
      .where('key', '=', key)
      .executeTakeFirst();

  it('writes the outcome on a fresh connection, so a retry gets the kept answer and nothing is sent twice', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const to = randomPhone();
    const attempts = await loseConnection(key, 'UPDATE', 2);
    const first = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
    expect(first.statusCode).toBe(200);
    // Two writes lost their connection; the third, on a fresh one, stored the answer.
    expect(await attempts()).toBe(3);
    expect(await stored(tenant.org.id, key)).toEqual({
      state: 'done',
      response_status: 200,
      response_body: first.body,
    });
    const retry = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toBe(first.body);
    expect(await reachedProvider(tenant.agentKey.auth, to)).toBe(1);
  });

  it('releases a failed send on a fresh connection, so the same key may be retried at once', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const body = templateSend(undefined, MAGIC_NUMBERS.serverError);
    const before = await reachedProvider(tenant.agentKey.auth, MAGIC_NUMBERS.serverError);
    const attempts = await loseConnection(key, 'DELETE', 1);
    const first = await send(tenant.agentKey.auth, body, key);
    expect(first.statusCode).toBe(502);
    expect(await attempts()).toBe(2);
    expect(await stored(tenant.org.id, key)).toBeUndefined();
    // Not 409 "still in progress": the provider failed for certain, so the key is free again.
    const retry = await send(tenant.agentKey.auth, body, key);
    expect(retry.statusCode).toBe(502);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect((await reachedProvider(tenant.agentKey.auth, MAGIC_NUMBERS.serverError)) - before).toBe(2);
  });

  it('when the fault outlasts the quick retries, answers and writes the outcome in the background', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const to = randomPhone();
    // One write and the five quick retries lose their connection; the first background one does not.
    const attempts = await loseConnection(key, 'UPDATE', QUICK_WAITS_MS.length + 1);
    const first = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
    expect(first.statusCode).toBe(200);
    expect(await attempts()).toBe(QUICK_WAITS_MS.length + 1);
    // Meanwhile the key is still in flight: a retry is told so, and nothing is sent again.
    expect((await send(tenant.agentKey.auth, templateSend(undefined, to), key)).statusCode).toBe(409);
    await until(async () => (await stored(tenant.org.id, key))?.state === 'done', 'the outcome written later', 10_000);
    const retry = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toBe(first.body);
    expect(await reachedProvider(tenant.agentKey.auth, to)).toBe(1);
  });

  it('keeps an unknown outcome (the provider did not answer in time) on a fresh connection too', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const to = randomPhone();
    const provider = t.ctx.messaging.provider;
    const original = provider.send.bind(provider);
    provider.send = async (input) => {
      await original(input);
      return { ok: false, kind: 'unknown', code: null, message: 'no answer within 10000 ms' };
    };
    try {
      const attempts = await loseConnection(key, 'UPDATE', 1);
      const first = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
      expect(first.statusCode).toBe(502);
      expect(await attempts()).toBe(2);
      const retry = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
      expect(retry.statusCode).toBe(502);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.body).toBe(first.body);
      expect(await reachedProvider(tenant.agentKey.auth, to)).toBe(1);
    } finally {
      provider.send = original;
    }
  });

  it("records the provider's ID of an accepted send once the fault passes, so its message is not left pending", async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const to = randomPhone();
    // The acceptance and its five quick retries lose their connection; the first background one does not.
    const attempts = await loseConnection(to, 'ACCEPT', QUICK_WAITS_MS.length + 1);
    const res = await t.app.inject({
      method: 'POST',
      url: SEND,
      headers: tenant.agentKey.auth,
      payload: templateSend(undefined, to),
    });
    expect(res.statusCode).toBe(200);
    expect(await attempts()).toBe(QUICK_WAITS_MS.length + 1);
    const { messageId } = res.json<{ messageId: string }>();
    const message = () =>
      t.ctx.db
        .selectFrom('messages')
        .select(['provider_message_id', 'status'])
        .where('org_id', '=', tenant.org.id)
        .where('to_phone', '=', to)
        .execute();
    await until(
      async () => (await message())[0]?.provider_message_id === messageId,
      'the acceptance written later',
      10_000,
    );
    expect(await message()).toEqual([{ provider_message_id: messageId, status: 'accepted' }]);
    expect(await reachedProvider(tenant.agentKey.auth, to)).toBe(1);
  });
});
