import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { requireKey } from '../../src/http/auth.js';
import { IdempotencyHeaders, idempotency } from '../../src/idempotency/idempotency.hook.js';
import {
  IDEMPOTENCY_STALE_IN_FLIGHT_MS,
  IDEMPOTENCY_TTL_MS,
  INVALID_IDEMPOTENCY_KEY,
} from '../../src/idempotency/idempotency.service.js';
import { ManualClock } from '../../src/shared/clock.js';
import { AppError } from '../../src/shared/errors.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeKey, makeOrg } from '../helpers/factories.js';

const PATH = '/api/channels/test-idempotent';

/**
 * A stand-in for the send route: authenticated, idempotent, and a handler that counts how many
 * times it "reaches the provider", can be held in flight, and fails the way a provider does.
 */
class FakeSend {
  readonly calls = new Map<string, number>();
  private gate: { promise: Promise<void>; open: () => void } | undefined;
  private arrived: (() => void) | undefined;

  hold(): { arrived: Promise<void>; release: () => void } {
    let open = () => {};
    const promise = new Promise<void>((resolve) => {
      open = resolve;
    });
    this.gate = { promise, open };
    const arrived = new Promise<void>((resolve) => {
      this.arrived = resolve;
    });
    return {
      arrived,
      release: () => {
        this.gate = undefined;
        open();
      },
    };
  }

  count(to: string): number {
    return this.calls.get(to) ?? 0;
  }

  async handle(to: string): Promise<{ success: true; messageId: string }> {
    const n = this.count(to) + 1;
    this.calls.set(to, n);
    this.arrived?.();
    this.arrived = undefined;
    if (this.gate) await this.gate.promise;
    if (to.startsWith('reject')) throw new AppError('PROVIDER_REJECTED', 'The recipient is not on the messaging app.');
    if (to.startsWith('down'))
      throw new AppError('PROVIDER_UNAVAILABLE', 'The messaging provider could not be reached.');
    return { success: true, messageId: `wamid.${to}.${n}` };
  }
}

async function idempotentApp(t: TestApp, fake: FakeSend): Promise<FastifyInstance> {
  const app = await buildApp(t.ctx, { logRequests: false });
  // Request logs at the test log level (the app raises them to warn when request logging is off).
  app.log.level = t.ctx.logger.level;
  const idem = idempotency(t.ctx, `POST ${PATH}`);
  app.withTypeProvider<TypeBoxTypeProvider>().post(
    PATH,
    {
      onRequest: [requireKey(t.ctx, 'channels')],
      preHandler: idem.preHandler,
      onSend: idem.onSend,
      config: { family: 'channel' },
      schema: {
        headers: IdempotencyHeaders,
        body: Type.Object({ to: Type.String(), text: Type.String() }, { additionalProperties: false }),
      },
    },
    async (request) => fake.handle(request.body.to),
  );
  await app.ready();
  return app;
}

describe.each(DIALECTS)('Idempotency-Key (%s)', (dialect) => {
  let t: TestApp;
  let app: FastifyInstance;
  let fake: FakeSend;
  let clock: ManualClock;
  let auth: Record<string, string>;
  let orgId: string;

  beforeAll(async () => {
    clock = new ManualClock(Date.UTC(2026, 10, 22, 12, 0, 0));
    t = await createTestApp(dialect, { clock });
    fake = new FakeSend();
    app = await idempotentApp(t, fake);
  });
  afterAll(async () => {
    await app.close();
    await t.close();
  });
  beforeEach(async () => {
    const org = await makeOrg(t.ctx);
    orgId = org.id;
    auth = (await makeKey(t.ctx, org.id)).auth;
  });

  const send = (body: Record<string, unknown>, key: string | undefined, headers: Record<string, string> = auth) =>
    app.inject({
      method: 'POST',
      url: PATH,
      headers: {
        ...headers,
        'content-type': 'application/json',
        ...(key === undefined ? {} : { 'idempotency-key': key }),
      },
      payload: body,
    });
  const fresh = (label: string) => `${label}-${randomBase62(8)}`;
  const stored = (key: string) =>
    t.ctx.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('key', '=', key)
      .executeTakeFirst();

  it('replays the first response for the same key and body, without sending again', async () => {
    const to = fresh('ok');
    const key = fresh('key');
    const first = await send({ to, text: 'hi' }, key);
    expect(first.statusCode).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(first.json()).toEqual({ success: true, messageId: `wamid.${to}.1` });

    // Same body with its fields in another order: the same request.
    const again = await send({ text: 'hi', to }, key);
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['content-type']).toMatch(/^application\/json/);
    expect(again.body).toBe(first.body);
    expect(fake.count(to)).toBe(1);

    const row = await stored(key);
    expect(row).toMatchObject({ state: 'done', response_status: 200, response_body: first.body });
  });

  it('without the header, every request sends', async () => {
    const to = fresh('ok');
    expect((await send({ to, text: 'hi' }, undefined)).statusCode).toBe(200);
    expect((await send({ to, text: 'hi' }, undefined)).statusCode).toBe(200);
    expect(fake.count(to)).toBe(2);
  });

  it('refuses the same key with another body with 422', async () => {
    const to = fresh('ok');
    const key = fresh('key');
    expect((await send({ to, text: 'hi' }, key)).statusCode).toBe(200);
    const other = await send({ to, text: 'something else' }, key);
    expect(other.statusCode).toBe(422);
    expect(other.json()).toEqual({
      success: false,
      error: 'This Idempotency-Key was already used with a different request body; use a new key for a new request.',
    });
    expect(fake.count(to)).toBe(1);
  });

  it('answers 409 while the first request is in flight, then replays it', async () => {
    const to = fresh('ok');
    const key = fresh('key');
    const held = fake.hold();
    const first = send({ to, text: 'hi' }, key);
    await held.arrived;
    const during = await send({ to, text: 'hi' }, key);
    expect(during.statusCode).toBe(409);
    expect(during.json()).toEqual({
      success: false,
      error: 'A request with this Idempotency-Key is still in progress; retry once it has finished.',
    });
    expect((await stored(key))?.state).toBe('in_flight');
    held.release();
    expect((await first).statusCode).toBe(200);
    const after = await send({ to, text: 'hi' }, key);
    expect(after.statusCode).toBe(200);
    expect(after.headers['idempotent-replayed']).toBe('true');
    expect(fake.count(to)).toBe(1);
  });

  it('lets exactly one of several identical racing sends reach the provider', async () => {
    const to = fresh('ok');
    const key = fresh('key');
    const results = await Promise.all(Array.from({ length: 8 }, () => send({ to, text: 'race' }, key)));
    expect(fake.count(to)).toBe(1);
    const sent = results.filter((r) => r.statusCode === 200 && r.headers['idempotent-replayed'] === undefined);
    expect(sent).toHaveLength(1);
    for (const r of results) {
      if (r.statusCode === 200) expect(r.body).toBe(sent[0]?.body);
      else expect(r.statusCode).toBe(409);
    }
  });

  it('lets exactly one of two sends held side by side through, the other gets 409', async () => {
    const to = fresh('ok');
    const key = fresh('key');
    const held = fake.hold();
    const both = Promise.all([send({ to, text: 'race' }, key), send({ to, text: 'race' }, key)]);
    await held.arrived;
    // Give the second request every chance to reach the handler too, if it could.
    await new Promise((r) => setTimeout(r, 50));
    held.release();
    const [a, b] = await both;
    // The one that reached the handler sent; the other was refused while it was in flight, or,
    // on a very slow machine, replayed it after it finished.
    const answers = [a, b].map((r) => `${r?.statusCode} ${r?.headers['idempotent-replayed'] ?? 'sent'}`).sort();
    expect([
      ['200 sent', '409 sent'],
      ['200 sent', '200 true'],
    ]).toContainEqual(answers);
    expect(fake.count(to)).toBe(1);
  });

  it('scopes keys to the organization', async () => {
    const key = fresh('key');
    const to = fresh('ok');
    const otherOrg = await makeOrg(t.ctx);
    const otherAuth = (await makeKey(t.ctx, otherOrg.id)).auth;
    expect((await send({ to, text: 'hi' }, key)).statusCode).toBe(200);
    // Same key elsewhere: a separate request, even with another body.
    const other = await send({ to, text: 'another org' }, key, otherAuth);
    expect(other.statusCode).toBe(200);
    expect(other.headers['idempotent-replayed']).toBeUndefined();
    expect(fake.count(to)).toBe(2);
    // And two keys of one organization share its keys.
    const sameOrgKey = (await makeKey(t.ctx, orgId)).auth;
    const replay = await send({ to, text: 'hi' }, key, sameOrgKey);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(fake.count(to)).toBe(2);
  });

  it('stores a provider rejection (4xx) and replays it', async () => {
    const to = fresh('reject');
    const key = fresh('key');
    const first = await send({ to, text: 'hi' }, key);
    expect(first.statusCode).toBe(400);
    expect(first.json()).toEqual({ success: false, error: 'The recipient is not on the messaging app.' });
    const again = await send({ to, text: 'hi' }, key);
    expect(again.statusCode).toBe(400);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
    expect(fake.count(to)).toBe(1);
  });

  it('does not store a 5xx: the claim is released and the same key may retry', async () => {
    const to = fresh('down');
    const key = fresh('key');
    const first = await send({ to, text: 'hi' }, key);
    expect(first.statusCode).toBe(502);
    expect(await stored(key)).toBeUndefined();
    const retry = await send({ to, text: 'hi' }, key);
    expect(retry.statusCode).toBe(502);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(fake.count(to)).toBe(2);
  });

  it('does not claim the key for a request refused before the handler', async () => {
    const key = fresh('key');
    const bad = await send({ to: fresh('ok') }, key);
    expect(bad.statusCode).toBe(400);
    expect(await stored(key)).toBeUndefined();
  });

  it('forgets a key after 24 hours', async () => {
    const to = fresh('ok');
    const key = fresh('key');
    expect((await send({ to, text: 'hi' }, key)).statusCode).toBe(200);
    clock.advance(IDEMPOTENCY_TTL_MS - 1_000);
    expect((await send({ to, text: 'hi' }, key)).headers['idempotent-replayed']).toBe('true');
    expect((await send({ to, text: 'other' }, key)).statusCode).toBe(422);
    clock.advance(1_000);
    // Expired: a new request under the old key, even with another body.
    const later = await send({ to, text: 'other' }, key);
    expect(later.statusCode).toBe(200);
    expect(later.headers['idempotent-replayed']).toBeUndefined();
    expect(fake.count(to)).toBe(2);
    expect(await stored(key)).toMatchObject({ state: 'done', created_at: clock.now() });
  });

  it('deletes expired keys from the table as it goes', async () => {
    const old = fresh('expired');
    await t.ctx.db
      .insertInto('idempotency_keys')
      .values({
        org_id: orgId,
        key: old,
        request_hash: 'old',
        state: 'done',
        response_status: 200,
        response_body: '{}',
        created_at: clock.now() - IDEMPOTENCY_TTL_MS,
      })
      .execute();
    // Purges run at most every 10 minutes per process.
    clock.advance(10 * 60 * 1000);
    expect((await send({ to: fresh('ok'), text: 'hi' }, fresh('key'))).statusCode).toBe(200);
    expect(await stored(old)).toBeUndefined();
  });

  it('stops an abandoned in-flight claim from blocking the key', async () => {
    const to = fresh('ok');
    const key = fresh('key');
    // A claim left in flight by a process that died mid-request.
    await t.ctx.db
      .insertInto('idempotency_keys')
      .values({
        org_id: orgId,
        key,
        request_hash: 'from-a-crashed-process',
        state: 'in_flight',
        response_status: null,
        response_body: null,
        created_at: clock.now() - IDEMPOTENCY_STALE_IN_FLIGHT_MS + 1_000,
      })
      .execute();
    expect((await send({ to, text: 'hi' }, key)).statusCode).toBe(422);
    clock.advance(1_000);
    const res = await send({ to, text: 'hi' }, key);
    expect(res.statusCode).toBe(200);
    expect(fake.count(to)).toBe(1);
  });

  it.each([
    ['empty', ''],
    ['too long', 'k'.repeat(256)],
    ['a space', 'two words'],
    ['a control character', 'tab\there'],
  ])('refuses a key that is %s with 400', async (_label, key) => {
    const to = fresh('ok');
    const res = await send({ to, text: 'hi' }, key);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error: INVALID_IDEMPOTENCY_KEY });
    expect(fake.count(to)).toBe(0);
  });

  it('accepts a key of 255 visible characters', async () => {
    const key = `${'!~'.repeat(120)}${randomBase62(15)}`;
    expect(key).toHaveLength(255);
    const res = await send({ to: fresh('ok'), text: 'hi' }, key);
    expect(res.statusCode).toBe(200);
    expect((await stored(key))?.state).toBe('done');
  });
});
