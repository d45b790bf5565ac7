import { randomUUID } from 'node:crypto';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimIdempotencyKey, IDEMPOTENCY_STALE_IN_FLIGHT_MS } from '../../src/idempotency/idempotency.service.js';
import { ManualClock } from '../../src/shared/clock.js';
import { PG_URL, type TestApp } from '../helpers/app.js';
import { makeOrg } from '../helpers/factories.js';
import { createQuietTestApp } from '../helpers/messaging.js';

/** What node-postgres says when the server ends a connection under a statement. */
const lostConnection = () =>
  Object.assign(new Error('terminating connection due to administrator command'), {
    code: '57P01',
    severity: 'FATAL',
  });

/**
 * The next write of `kind` to the idempotency table loses its answer: `after` its commit (the
 * connection died before the answer came back) or before it ran at all.
 */
function losesAnswer(kind: 'InsertQueryNode' | 'UpdateQueryNode', when: 'after' | 'before'): KyselyPlugin {
  let armed = true;
  const hit = new WeakSet<object>();
  return {
    transformQuery({ node, queryId }: PluginTransformQueryArgs) {
      const table = JSON.stringify(node).includes('"idempotency_keys"');
      if (armed && table && node.kind === kind) {
        armed = false;
        if (when === 'before') throw lostConnection();
        hit.add(queryId);
      }
      return node;
    },
    async transformResult({ result, queryId }: PluginTransformResultArgs) {
      if (hit.has(queryId)) throw lostConnection();
      return result;
    },
  };
}

/**
 * PostgreSQL only: a statement whose answer is lost with its connection (it may have committed)
 * is PostgreSQL's (SQLite has no connection to lose). The loss is made by a Kysely plugin at the
 * exact statement, after the real statement ran on the real database.
 */
describe.skipIf(!PG_URL)('an idempotency claim whose answer is lost (postgres)', () => {
  let t: TestApp;
  let orgId: string;
  const clock = new ManualClock(Date.now());
  beforeAll(async () => {
    t = await createQuietTestApp('postgres');
    orgId = (await makeOrg(t.ctx)).id;
  });
  afterAll(async () => {
    await t.close();
  });

  const row = (key: string) =>
    t.ctx.db
      .selectFrom('idempotency_keys')
      .select(['state', 'created_at', 'claim_token'])
      .where('org_id', '=', orgId)
      .where('key', '=', key)
      .executeTakeFirst();

  it('an INSERT that committed: the request reads back that the claim is its own and goes on', async () => {
    const key = randomUUID();
    const outcome = await claimIdempotencyKey(t.ctx.db.withPlugin(losesAnswer('InsertQueryNode', 'after')), clock, {
      orgId,
      key,
      requestHash: 'h1',
    });
    expect(outcome.kind).toBe('claimed');
    const claim = outcome.kind === 'claimed' ? outcome.claim : undefined;
    expect(await row(key)).toEqual({ state: 'in_flight', created_at: claim?.createdAt, claim_token: claim?.token });
  });

  it('an INSERT that never ran: the request finds no claim and makes it', async () => {
    const key = randomUUID();
    const outcome = await claimIdempotencyKey(t.ctx.db.withPlugin(losesAnswer('InsertQueryNode', 'before')), clock, {
      orgId,
      key,
      requestHash: 'h1',
    });
    expect(outcome.kind).toBe('claimed');
    const claim = outcome.kind === 'claimed' ? outcome.claim : undefined;
    expect(await row(key)).toEqual({ state: 'in_flight', created_at: claim?.createdAt, claim_token: claim?.token });
  });

  it('the takeover of an abandoned claim that committed: the request reads back that it took it', async () => {
    const key = randomUUID();
    const first = await claimIdempotencyKey(t.ctx.db, clock, { orgId, key, requestHash: 'h1' });
    expect(first.kind).toBe('claimed');
    clock.advance(IDEMPOTENCY_STALE_IN_FLIGHT_MS);
    const outcome = await claimIdempotencyKey(t.ctx.db.withPlugin(losesAnswer('UpdateQueryNode', 'after')), clock, {
      orgId,
      key,
      requestHash: 'h1',
    });
    expect(outcome.kind).toBe('claimed');
    const claim = outcome.kind === 'claimed' ? outcome.claim : undefined;
    expect(claim?.createdAt).toBe(clock.now());
    expect(await row(key)).toEqual({ state: 'in_flight', created_at: clock.now(), claim_token: claim?.token });
  });

  it("another request's claim is never taken for this one's", async () => {
    const key = randomUUID();
    const first = await claimIdempotencyKey(t.ctx.db, clock, { orgId, key, requestHash: 'h1' });
    expect(first.kind).toBe('claimed');
    // The key is held: this request's INSERT fails for that reason, its answer lost; the row read
    // back is the first request's, so this one is told the key is in flight.
    await expect(
      claimIdempotencyKey(t.ctx.db.withPlugin(losesAnswer('InsertQueryNode', 'before')), clock, {
        orgId,
        key,
        requestHash: 'h1',
      }),
    ).rejects.toMatchObject({ code: 'IDEMPOTENCY_IN_FLIGHT' });
    const claim = first.kind === 'claimed' ? first.claim : undefined;
    expect((await row(key))?.claim_token).toBe(claim?.token);
  });
});
