import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendClaimExpiryMs } from '../../src/channels/channel.routes.js';
import { IDEMPOTENCY_TTL_MS, INVALID_IDEMPOTENCY_KEY } from '../../src/idempotency/idempotency.service.js';
import type { MessagingProvider } from '../../src/messaging/provider.js';
import { MAGIC_NUMBERS } from '../../src/sandbox/index.js';
import { ManualClock } from '../../src/shared/clock.js';
import { DIALECTS } from '../helpers/app.js';
import { makeKey } from '../helpers/factories.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  templateSend,
} from '../helpers/messaging.js';

const SEND = '/api/channels/send';

/** Lets a test hold provider calls in flight; otherwise passes them through to the sandbox. */
function holdable(provider: MessagingProvider) {
  const original = provider.send.bind(provider);
  let gate: Promise<void> | undefined;
  let arrived: (() => void) | undefined;
  provider.send = async (input) => {
    arrived?.();
    arrived = undefined;
    if (gate) await gate;
    return original(input);
  };
  return {
    hold() {
      let open = () => {};
      gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const reached = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      return {
        reached,
        release() {
          gate = undefined;
          open();
        },
      };
    },
  };
}

describe.each(DIALECTS)('Idempotency-Key on POST /api/channels/send (%s)', (dialect) => {
  let t: MessagingTestApp;
  let clock: ManualClock;
  let provider: ReturnType<typeof holdable>;
  beforeAll(async () => {
    clock = new ManualClock(Date.now());
    t = await createMessagingApp(dialect, { clock });
    provider = holdable(t.ctx.messaging.provider);
  });
  afterAll(async () => {
    await t.close();
  });

  const send = (auth: Record<string, string>, body: unknown, key?: string) =>
    t.app.inject({
      method: 'POST',
      url: SEND,
      headers: { ...auth, ...(key === undefined ? {} : { 'idempotency-key': key }) },
      payload: body as Record<string, unknown>,
    });
  /** Messages that reached the send step (stored just before the provider call). */
  const sentTo = async (orgId: string, to: string) =>
    (
      await t.ctx.db
        .selectFrom('messages')
        .select('id')
        .where('org_id', '=', orgId)
        .where('to_phone', '=', to)
        .execute()
    ).length;

  it('replays the first answer for the same key and body, and the provider is called once', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const to = randomPhone();
    const key = randomUUID();
    const first = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
    expect(first.statusCode).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(first.headers.ratelimit).toMatch(/^"key";r=\d+;t=\d+$/);

    const again = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect(again.json().messageId).toMatch(/^wamid\./);
    expect(await sentTo(tenant.org.id, to)).toBe(1);
  });

  it('answers 422 for the same key with another body, without sending', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const to = randomPhone();
    expect((await send(tenant.agentKey.auth, templateSend(undefined, to), key)).statusCode).toBe(200);
    const other = randomPhone();
    const res = await send(tenant.agentKey.auth, templateSend(undefined, other), key);
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      success: false,
      error: 'This Idempotency-Key was already used with a different request body; use a new key for a new request.',
    });
    expect(await sentTo(tenant.org.id, other)).toBe(0);
  });

  it('answers 409 while the first send is in flight, then replays it', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const to = randomPhone();
    const held = provider.hold();
    const first = send(tenant.agentKey.auth, templateSend(undefined, to), key);
    await held.reached;
    const during = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
    expect(during.statusCode).toBe(409);
    expect(during.json()).toEqual({
      success: false,
      error: 'A request with this Idempotency-Key is still in progress; retry once it has finished.',
    });
    held.release();
    const done = await first;
    expect(done.statusCode).toBe(200);
    const after = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
    expect(after.headers['idempotent-replayed']).toBe('true');
    expect(after.json()).toEqual(done.json());
    expect(await sentTo(tenant.org.id, to)).toBe(1);
  });

  it('lets exactly one of several identical sends racing over HTTP reach the provider', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const to = randomPhone();
    const body = JSON.stringify(templateSend(undefined, to));
    const held = provider.hold();
    const racing = Array.from({ length: 6 }, () =>
      fetch(`${t.url}${SEND}`, {
        method: 'POST',
        headers: { ...tenant.agentKey.auth, 'content-type': 'application/json', 'idempotency-key': key },
        body,
      }),
    );
    await held.reached;
    await new Promise((r) => setTimeout(r, 100));
    held.release();
    const answers = await Promise.all(
      (await Promise.all(racing)).map(async (r) => ({
        status: r.status,
        replayed: r.headers.get('idempotent-replayed') === 'true',
        body: await r.text(),
      })),
    );
    // One sent; every other one was refused while it was in flight (or, had it come in after the
    // first had finished, got its replay).
    const sent = answers.filter((a) => a.status === 200 && !a.replayed);
    expect(sent).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409).length).toBeGreaterThanOrEqual(1);
    for (const a of answers) {
      if (a.status === 200) expect(a.body).toBe(sent[0]?.body);
      else expect(a.status).toBe(409);
    }
    expect(await sentTo(tenant.org.id, to)).toBe(1);
  });

  it('keeps keys per organization', async () => {
    const a = await makeSendingTenant(t.ctx);
    const b = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const to = randomPhone();
    const first = await send(a.agentKey.auth, templateSend(undefined, to), key);
    const second = await send(b.agentKey.auth, templateSend(undefined, to), key);
    expect(first.statusCode).toBe(200);
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(second.json().messageId).not.toBe(first.json().messageId);
    expect(await sentTo(a.org.id, to)).toBe(1);
    expect(await sentTo(b.org.id, to)).toBe(1);
    // Another key of the first organization (for the same agent) shares its idempotency keys.
    const sibling = await makeKey(t.ctx, a.org.id, { scope: 'agent', agentId: a.agent.id, permissions: ['channels'] });
    const viaOrgKey = await send(sibling.auth, templateSend(undefined, to), key);
    expect(viaOrgKey.statusCode).toBe(200);
    expect(viaOrgKey.headers['idempotent-replayed']).toBe('true');
    expect(viaOrgKey.json()).toEqual(first.json());
    expect(await sentTo(a.org.id, to)).toBe(1);
  });

  it("does not replay one agent key's send to another agent key that omits convId", async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const to = randomPhone();
    // The same body, but each agent key targets its own agent: two different requests.
    expect((await send(tenant.agentKey.auth, templateSend(undefined, to), key)).statusCode).toBe(200);
    const other = await send(tenant.otherKey.auth, templateSend(undefined, to), key);
    expect(other.statusCode).toBe(422);
    expect(await sentTo(tenant.org.id, to)).toBe(1);
  });

  it('stores a provider rejection and replays it', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const body = templateSend(undefined, MAGIC_NUMBERS.notOnApp);
    const first = await send(tenant.agentKey.auth, body, key);
    expect(first.statusCode).toBe(400);
    const again = await send(tenant.agentKey.auth, body, key);
    expect(again.statusCode).toBe(400);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect(await sentTo(tenant.org.id, MAGIC_NUMBERS.notOnApp)).toBe(1);
  });

  it('stores what the send verb answered (403 for another agent, 404, 400s) and replays it', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const cases = [
      { auth: tenant.agentKey.auth, body: templateSend(tenant.other.id), status: 403 },
      { auth: tenant.orgKey.auth, body: templateSend('agt_doesnotexist'), status: 404 },
      { auth: tenant.agentKey.auth, body: { ...templateSend(), channel: 'sms' }, status: 400 },
      { auth: tenant.agentKey.auth, body: templateSend(undefined, '+1555'), status: 400 },
      { auth: tenant.orgKey.auth, body: templateSend(), status: 400 },
    ];
    for (const c of cases) {
      const key = randomUUID();
      const first = await send(c.auth, c.body, key);
      expect(first.statusCode).toBe(c.status);
      const row = await t.ctx.db
        .selectFrom('idempotency_keys')
        .select(['state', 'response_status', 'response_body'])
        .where('org_id', '=', tenant.org.id)
        .where('key', '=', key)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ state: 'done', response_status: c.status, response_body: first.body });
      const again = await send(c.auth, c.body, key);
      expect(again.statusCode).toBe(c.status);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.json()).toEqual(first.json());
    }
  });

  it('never uses the key for a request refused before the send verb (401, 403 of the key, 429, schema 400)', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const noChannels = await makeKey(t.ctx, tenant.org.id, { permissions: ['endusers'] });
    const key = randomUUID();
    const to = randomPhone();
    const body = templateSend(tenant.agent.id, to);
    expect((await send({ authorization: 'Bearer prl_us_nope' }, body, key)).statusCode).toBe(401);
    expect((await send(noChannels.auth, body, key)).statusCode).toBe(403);
    expect((await send(tenant.orgKey.auth, { ...body, extra: 1 }, key)).statusCode).toBe(400);
    expect(
      await t.ctx.db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('org_id', '=', tenant.org.id)
        .where('key', '=', key)
        .execute(),
    ).toEqual([]);
    const real = await send(tenant.orgKey.auth, body, key);
    expect(real.statusCode).toBe(200);
    expect(real.headers['idempotent-replayed']).toBeUndefined();
    expect(await sentTo(tenant.org.id, to)).toBe(1);
  });

  it('releases the key on 502 so the same key can be retried', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const body = templateSend(undefined, MAGIC_NUMBERS.serverError);
    const first = await send(tenant.agentKey.auth, body, key);
    expect(first.statusCode).toBe(502);
    const retry = await send(tenant.agentKey.auth, body, key);
    expect(retry.statusCode).toBe(502);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(await sentTo(tenant.org.id, MAGIC_NUMBERS.serverError)).toBe(2);
  });

  it('forgets a key after 24 hours', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const key = randomUUID();
    const to = randomPhone();
    expect((await send(tenant.agentKey.auth, templateSend(undefined, to), key)).statusCode).toBe(200);
    clock.advance(IDEMPOTENCY_TTL_MS - 1);
    expect((await send(tenant.agentKey.auth, templateSend(undefined, to), key)).headers['idempotent-replayed']).toBe(
      'true',
    );
    clock.advance(1);
    const later = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
    expect(later.statusCode).toBe(200);
    expect(later.headers['idempotent-replayed']).toBeUndefined();
    expect(await sentTo(tenant.org.id, to)).toBe(2);
  });

  it('refuses an invalid key with 400 in the channel envelope, before sending', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    const to = randomPhone();
    for (const key of ['k'.repeat(256), 'with space', '']) {
      const res = await send(tenant.agentKey.auth, templateSend(undefined, to), key);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ success: false, error: INVALID_IDEMPOTENCY_KEY });
    }
    expect(await sentTo(tenant.org.id, to)).toBe(0);
  });

  it('documents the header and the 409, 422 and 429 answers in the OpenAPI description', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const op = doc.paths[SEND].post;
    const header = op.parameters.find((p: { in: string; name: string }) => p.in === 'header');
    expect(header).toMatchObject({ name: 'idempotency-key', required: false });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '409', '422', '429']));
    expect(Object.keys(op.responses['200'].headers)).toEqual(['RateLimit-Policy', 'RateLimit', 'Idempotent-Replayed']);
    expect(Object.keys(op.responses['429'].headers)).toEqual(['Retry-After', 'RateLimit-Policy', 'RateLimit']);
  });
});

describe.each(DIALECTS)('the in-flight claim of a send and the provider timeout (%s)', (dialect) => {
  it('a send that may still be waiting for the provider keeps its key past the longest timeout', async () => {
    const clock = new ManualClock(Date.now());
    // The longest provider timeout allowed (2 minutes): the claim must outlive it, or a retry could send twice.
    const t = await createMessagingApp(dialect, { clock, env: { PARLEY_PROVIDER_TIMEOUT_MS: '120000' } });
    const provider = holdable(t.ctx.messaging.provider);
    try {
      const tenant = await makeSendingTenant(t.ctx);
      const key = randomUUID();
      const to = randomPhone();
      const request = () =>
        t.app.inject({
          method: 'POST',
          url: SEND,
          headers: { ...tenant.agentKey.auth, 'idempotency-key': key },
          payload: templateSend(undefined, to),
        });
      const held = provider.hold();
      const first = request();
      await held.reached;
      clock.advance(4 * 60 * 1000); // past the timeout and its minute of margin, inside the 5-minute floor
      const during = await request();
      expect(during.statusCode).toBe(409);
      held.release();
      expect((await first).statusCode).toBe(200);
      const sends = await t.ctx.db.selectFrom('messages').select('id').where('to_phone', '=', to).execute();
      expect(sends).toHaveLength(1);
      await t.settle();
    } finally {
      await t.close();
    }
  });

  it('ties the claim expiry to the timeout: its three waits plus a minute (the hook never goes under 5 minutes)', () => {
    expect(sendClaimExpiryMs(10_000)).toBe(90_000);
    expect(sendClaimExpiryMs(120_000)).toBe(420_000);
  });
});
