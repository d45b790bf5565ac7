/**
 * Webhook campaigns through real HTTP and the sandbox: the auth table of the campaign endpoints,
 * per-recipient results, dedupe, Idempotency-Key, the campaign limits, pause and resume, the
 * sandbox's magic numbers, and what GET shows.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { createCampaign } from '../../src/campaigns/campaign.service.js';
import { revokeKey } from '../../src/keys/key.service.js';
import { setOrganizationPlan } from '../../src/orgs/org.service.js';
import { MAGIC_NUMBERS } from '../../src/sandbox/index.js';
import { ManualClock } from '../../src/shared/clock.js';
import { DIALECTS, type TestApp } from '../helpers/app.js';
import {
  acceptedPerRecipient,
  campaignCounts,
  makeCampaignTenant,
  phones,
  postRecipients,
} from '../helpers/campaigns.js';
import { makeCampaign, makeKey } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import { createMessagingApp, templateSend } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

const ENVELOPE = { success: false, error: expect.any(String) };

describe.each(DIALECTS)('webhook campaigns (%s)', (dialect) => {
  const apps: TestApp[] = [];
  const open = async (env: Record<string, string> = {}, extra: { clock?: ManualClock } = {}) => {
    const t = await createMessagingApp(dialect, { env, ...extra });
    apps.push(t);
    return t;
  };
  afterEach(async () => {
    for (const t of apps.splice(0)) await t.close();
  });

  it('answers the auth table: own campaign key 202; any other key 401 or 403', async () => {
    const t = await open();
    const c = await makeCampaignTenant(t.ctx);
    const other = await makeCampaign(t.ctx, c.org.id);
    const otherKey = await makeKey(t.ctx, c.org.id, { scope: 'campaign', campaignId: other.id });
    // Keys that can no longer be made (Campaigns on an organization or agent key), as stored before that rule.
    const orgKey = await makeKey(t.ctx, c.org.id, { permissions: ['channels'] });
    const agentKey = await makeKey(t.ctx, c.org.id, { scope: 'agent', agentId: c.agent.id, permissions: ['channels'] });
    await t.ctx.db
      .updateTable('api_keys')
      .set({ permissions: 'channels,campaigns' })
      .where('id', 'in', [orgKey.id, agentKey.id])
      .execute();
    const revoked = await makeKey(t.ctx, c.org.id, { scope: 'campaign', campaignId: c.campaign.id });
    await revokeKey(t.ctx.db, t.ctx.clock, c.org.id, revoked.id);
    const body = [{ to: phones(1)[0] }];
    const post = (headers: Record<string, string>) => postRecipients(t, c.campaign.id, headers, body);

    const ok = await post(c.campaignKey.auth);
    expect(ok.statusCode, ok.body).toBe(202);
    expect(ok.json()).toMatchObject({ success: true, accepted: 1, duplicates: 0, rejected: 0 });

    for (const [headers, status] of [
      [{}, 401],
      [{ authorization: 'Bearer nope' }, 401],
      [revoked.auth, 401],
      [otherKey.auth, 403],
      [orgKey.auth, 403],
      [agentKey.auth, 403],
    ] as const) {
      const res = await post(headers);
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json()).toEqual(ENVELOPE);
      for (const url of [`/api/campaigns/${c.campaign.id}`, `/api/campaigns/${c.campaign.id}/deliveries`]) {
        const get = await call(t, { method: 'GET', url, headers });
        expect(get.statusCode, `${url} ${get.body}`).toBe(status);
        expect(get.json()).toEqual(ENVELOPE);
      }
    }
    expect((await post(otherKey.auth)).json().error).toBe('Only the key bound to this campaign can call its endpoint.');
    expect((await post(revoked.auth)).json().error).toBe('This API key has been revoked.');

    await setOrganizationPlan(t.ctx.db, c.org.id, 'free');
    const free = await post(c.campaignKey.auth);
    expect(free.statusCode).toBe(403);
    expect(free.json()).toEqual({ success: false, error: 'API access requires a paid plan' });
  });

  it('answers a result per recipient, stores the accepted ones and sends each once', async () => {
    const t = await open();
    const c = await makeCampaignTenant(t.ctx);
    const [a, b, d] = phones(3);
    const res = await postRecipients(t, c.campaign.id, c.campaignKey.auth, [
      { to: a, endUser: { name: 'Ada', tags: ['spring'] } },
      { to: 'not a phone' },
      42,
      { to: b, parameters: { body: [''] } },
      { to: b, surprise: true },
      { to: `${b?.slice(0, 2)} ${b?.slice(2)}` },
      { to: d, dedupeKey: 'order-1' },
    ]);
    expect(res.statusCode, res.body).toBe(202);
    const out = res.json();
    expect(out).toMatchObject({ success: true, accepted: 3, duplicates: 0, rejected: 4 });
    expect(out.results.map((r: { status: string }) => r.status)).toEqual([
      'queued',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
      'queued',
      'queued',
    ]);
    expect(out.results[1]).toEqual({
      index: 1,
      status: 'rejected',
      error:
        "recipients[1].to must be a valid phone number in international format, such as +14155550100; got 'not a phone'.",
    });
    expect(out.results[2].error).toMatch(/recipients\[2\] must be an object/);
    expect(out.results[3].error).toMatch(/recipients\[3\]\.parameters\.body\.0' must not be empty/);
    expect(out.results[4].error).toBe("recipients[4] has an unknown field 'surprise'.");
    for (const i of [0, 5, 6]) expect(out.results[i].deliveryId).toMatch(/^dlv_/);

    // Stored before the 202, and sent: the sandbox's statuses take each to read.
    await until(async () => (await campaignCounts(t, c.campaign.id, c.campaignKey.auth)).read === 3, 'three reads');
    const counts = await campaignCounts(t, c.campaign.id, c.campaignKey.auth);
    expect(counts).toEqual({ queued: 0, sending: 0, sent: 0, delivered: 0, read: 3, failed: 0 });
    const accepted = await acceptedPerRecipient(t, c.agent.id);
    expect([...accepted.entries()].sort()).toEqual([a, b, d].map((p) => [p, 1]).sort());

    const list = await call(t, {
      method: 'GET',
      url: `/api/campaigns/${c.campaign.id}/deliveries`,
      headers: c.campaignKey.auth,
    });
    expect(list.statusCode, list.body).toBe(200);
    const first = list.json().data.find((d: { id: string }) => d.id === out.results[0].deliveryId);
    expect(first).toMatchObject({ id: out.results[0].deliveryId, to: a, status: 'read', error: null });
    expect(first.messageId).toMatch(/^wamid\./);
    expect(first.sentAt).toBeGreaterThanOrEqual(first.createdAt);
    // The recipient became an end user of origin imported, in a conversation of the campaign.
    const eu = await t.ctx.db
      .selectFrom('end_users')
      .select(['id', 'origin', 'name'])
      .where('id', '=', first.endUserId)
      .executeTakeFirstOrThrow();
    expect(eu).toMatchObject({ origin: 'imported', name: 'Ada' });
    const conv = await t.ctx.db
      .selectFrom('conversations')
      .select(['campaign_id', 'agent_id', 'end_user_id'])
      .where('id', '=', first.conversationId)
      .executeTakeFirstOrThrow();
    expect(conv).toEqual({ campaign_id: c.campaign.id, agent_id: c.agent.id, end_user_id: eu.id });

    const show = await call(t, {
      method: 'GET',
      url: `/api/campaigns/${c.campaign.id}`,
      headers: c.campaignKey.auth,
    });
    expect(show.json()).toMatchObject({
      id: c.campaign.id,
      name: 'Spring launch',
      agentId: c.agent.id,
      template: 'hello_world',
      language: 'en_US',
      status: 'active',
    });
  });

  it('refuses a body that is not a list of 1 to 1,000 recipients with 400', async () => {
    const t = await open();
    const c = await makeCampaignTenant(t.ctx);
    const url = `/api/campaigns/${c.campaign.id}/webhook`;
    for (const payload of [
      {},
      { recipients: [] },
      { recipients: 'x' },
      { recipients: Array.from({ length: 1001 }, () => ({ to: '+14155550100' })) },
      { recipients: [{ to: '+14155550100' }], extra: 1 },
    ]) {
      const res = await call(t, { method: 'POST', url, headers: c.campaignKey.auth, payload });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toEqual(ENVELOPE);
    }
    const thousand = await postRecipients(
      t,
      c.campaign.id,
      c.campaignKey.auth,
      phones(1000).map((to) => ({ to })),
    );
    expect(thousand.statusCode, thousand.body).toBe(202);
    expect(thousand.json().accepted).toBe(1000);
  });

  it('dedupes on dedupeKey within a request, across requests, per campaign, for 30 days', async () => {
    const clock = new ManualClock();
    const t = await open({}, { clock });
    const c = await makeCampaignTenant(t.ctx);
    const [a, b] = phones(2);
    const first = await postRecipients(t, c.campaign.id, c.campaignKey.auth, [
      { to: a, dedupeKey: 'k1' },
      { to: b, dedupeKey: 'k1' },
      { to: b, dedupeKey: 'k2' },
    ]);
    expect(first.json()).toMatchObject({ accepted: 2, duplicates: 1, rejected: 0 });
    const [r0, r1, r2] = first.json().results;
    expect(r1).toEqual({ index: 1, status: 'duplicate', deliveryId: r0.deliveryId });

    const again = await postRecipients(t, c.campaign.id, c.campaignKey.auth, [
      { to: a, dedupeKey: 'k2' },
      { to: a, dedupeKey: 'k3' },
      { to: a, dedupeKey: 'k3' },
    ]);
    expect(again.json()).toMatchObject({ accepted: 1, duplicates: 2 });
    expect(again.json().results[0]).toEqual({ index: 0, status: 'duplicate', deliveryId: r2.deliveryId });

    // Another campaign has keys of its own.
    const other = await createCampaign(t.ctx.db, t.ctx.clock, {
      orgId: c.org.id,
      name: 'Other',
      agentId: c.agent.id,
      template: 'hello_world',
      language: 'en_US',
    });
    const otherKey = await makeKey(t.ctx, c.org.id, { scope: 'campaign', campaignId: other.id });
    const elsewhere = await postRecipients(t, other.id, otherKey.auth, [{ to: a, dedupeKey: 'k1' }]);
    expect(elsewhere.json()).toMatchObject({ accepted: 1, duplicates: 0 });

    clock.advance(29 * 86_400_000);
    expect(
      (await postRecipients(t, c.campaign.id, c.campaignKey.auth, [{ to: a, dedupeKey: 'k1' }])).json(),
    ).toMatchObject({
      duplicates: 1,
    });
    clock.advance(2 * 86_400_000);
    expect(
      (await postRecipients(t, c.campaign.id, c.campaignKey.auth, [{ to: a, dedupeKey: 'k1' }])).json(),
    ).toMatchObject({
      accepted: 1,
      duplicates: 0,
    });
  });

  it('replays a request with the same Idempotency-Key without storing it again', async () => {
    const t = await open();
    const c = await makeCampaignTenant(t.ctx);
    const body = phones(2).map((to) => ({ to }));
    const headers = { 'idempotency-key': 'batch-0001' };
    const first = await postRecipients(t, c.campaign.id, c.campaignKey.auth, body, headers);
    expect(first.statusCode).toBe(202);
    const second = await postRecipients(t, c.campaign.id, c.campaignKey.auth, body, headers);
    expect(second.statusCode).toBe(202);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.json()).toEqual(first.json());
    const stored = await t.ctx.db
      .selectFrom('campaign_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('campaign_id', '=', c.campaign.id)
      .executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(2);
    const changed = await postRecipients(t, c.campaign.id, c.campaignKey.auth, body.slice(1), headers);
    expect(changed.statusCode).toBe(422);
  });

  it('has limits of its own per key and per organization: 429 with Retry-After 60', async () => {
    const t = await open({ PARLEY_CAMPAIGN_RATE_LIMIT: '2', PARLEY_CAMPAIGN_RATE_LIMIT_ORG: '3' });
    const c = await makeCampaignTenant(t.ctx);
    const second = await makeKey(t.ctx, c.org.id, { scope: 'campaign', campaignId: c.campaign.id });
    const post = (auth: Record<string, string>) => postRecipients(t, c.campaign.id, auth, [{ to: phones(1)[0] }]);
    const ok = await post(c.campaignKey.auth);
    expect(ok.statusCode).toBe(202);
    expect(ok.headers['ratelimit-policy']).toBe('"key";q=2;w=60, "org";q=3;w=60');
    expect(ok.headers.ratelimit).toMatch(/^"key";r=1;t=\d+$/);
    expect((await post(c.campaignKey.auth)).statusCode).toBe(202);
    const byKey = await post(c.campaignKey.auth);
    expect(byKey.statusCode).toBe(429);
    expect(byKey.headers['retry-after']).toBe('60');
    expect(byKey.json()).toEqual(ENVELOPE);
    expect(byKey.json().error).toMatch(/this API key may make 2 requests per 60 seconds/);
    expect((await post(second.auth)).statusCode).toBe(202);
    const byOrg = await post(second.auth);
    expect(byOrg.statusCode).toBe(429);
    expect(byOrg.json().error).toMatch(/this organization may make 3 requests per 60 seconds/);
    // The send endpoint's counters are separate.
    const send = await call(t, {
      method: 'POST',
      url: '/api/channels/send',
      headers: c.agentKey.auth,
      payload: templateSend(),
    });
    expect(send.statusCode, send.body).toBe(200);
  });

  it('refuses recipients while paused (409), stops sending within a second, and resumes where it stopped', async () => {
    const t = await open({ PARLEY_NUMBER_MPS: '10' });
    const c = await makeCampaignTenant(t.ctx);
    const res = await postRecipients(
      t,
      c.campaign.id,
      c.campaignKey.auth,
      phones(40).map((to) => ({ to })),
    );
    expect(res.json().accepted).toBe(40);
    const handed = async () => {
      const n = await campaignCounts(t, c.campaign.id, c.campaignKey.auth);
      return n.sending + n.sent + n.delivered + n.read;
    };
    await until(async () => (await handed()) >= 5, 'some sends');
    const { pauseCampaign, resumeCampaign } = await import('../../src/campaigns/campaign.service.js');
    await pauseCampaign(t.ctx.db, t.ctx.clock, c.org.id, c.campaign.id);
    const paused = await postRecipients(t, c.campaign.id, c.campaignKey.auth, [{ to: phones(1)[0] }]);
    expect(paused.statusCode).toBe(409);
    expect(paused.json()).toEqual({
      success: false,
      error: 'This campaign is paused; recipients are accepted again once it is resumed.',
    });
    await new Promise((r) => setTimeout(r, 1_000));
    const atPause = await handed();
    expect(atPause).toBeLessThan(40);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await handed()).toBe(atPause);
    expect((await campaignCounts(t, c.campaign.id, c.campaignKey.auth)).queued).toBe(40 - atPause);

    await resumeCampaign(t.ctx.db, t.ctx.jobs, t.ctx.clock, c.org.id, c.campaign.id);
    await until(async () => (await campaignCounts(t, c.campaign.id, c.campaignKey.auth)).read === 40, 'all 40 read');
    const accepted = await acceptedPerRecipient(t, c.agent.id);
    expect(accepted.size).toBe(40);
    expect([...accepted.values()].every((n) => n === 1)).toBe(true);
  });

  it("follows the sandbox's magic numbers: a rejection fails, provider trouble is retried then fails, pair rate waits", async () => {
    const t = await open({
      PARLEY_CAMPAIGN_RETRY_DELAYS_MS: '100,100',
      PARLEY_CAMPAIGN_THROTTLE_RETRIES: '2',
    });
    const c = await makeCampaignTenant(t.ctx);
    const res = await postRecipients(t, c.campaign.id, c.campaignKey.auth, [
      { to: MAGIC_NUMBERS.notOnApp },
      { to: MAGIC_NUMBERS.serverError },
      { to: MAGIC_NUMBERS.throttled },
      { to: MAGIC_NUMBERS.pairRate },
      { to: MAGIC_NUMBERS.pairRate },
    ]);
    expect(res.json().accepted).toBe(5);
    const ids: string[] = res.json().results.map((r: { deliveryId: string }) => r.deliveryId);
    await until(
      async () => {
        const n = await campaignCounts(t, c.campaign.id, c.campaignKey.auth);
        return n.failed === 3 && n.read === 2;
      },
      'three failures and two reads',
      60_000,
    );
    const list = await call(t, {
      method: 'GET',
      url: `/api/campaigns/${c.campaign.id}/deliveries?status=failed`,
      headers: c.campaignKey.auth,
    });
    const failed = new Map(list.json().data.map((d: { id: string; error: string }) => [d.id, d.error]));
    expect(failed.get(ids[0])).toBe(
      `The provider rejected the message: ${MAGIC_NUMBERS.notOnApp} cannot receive it, it is not a user of the messaging app.`,
    );
    expect(failed.get(ids[1])).toMatch(/could not be reached or failed/);
    expect(failed.get(ids[2])).toMatch(/sending rate limit was reached \(code 130429\)/);
    // Throttled three times in all: its first answer and two retries.
    const throttledCalls = t.sandbox.received.filter(
      (r) => (r.body as { to?: string }).to === MAGIC_NUMBERS.throttled,
    ).length;
    expect(throttledCalls).toBe(3);
    // The pair-rate number: both sent, the second after the sandbox's pair window.
    const pair = t.sandbox.received.filter((r) => (r.body as { to?: string }).to === MAGIC_NUMBERS.pairRate);
    expect(pair.length).toBeGreaterThanOrEqual(3);
    expect((await acceptedPerRecipient(t, c.agent.id)).get(MAGIC_NUMBERS.pairRate)).toBe(2);
  }, 90_000);

  it('pages deliveries and filters them by status', async () => {
    const t = await open();
    const c = await makeCampaignTenant(t.ctx);
    await postRecipients(t, c.campaign.id, c.campaignKey.auth, [
      ...phones(5).map((to) => ({ to })),
      { to: MAGIC_NUMBERS.notOnApp },
    ]);
    await until(async () => {
      const n = await campaignCounts(t, c.campaign.id, c.campaignKey.auth);
      return n.read === 5 && n.failed === 1;
    }, 'five reads and a failure');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { statusCode: number; body: string; json(): { data: { id: string }[]; nextCursor: string | null } } =
        await call(t, {
          method: 'GET',
          url: `/api/campaigns/${c.campaign.id}/deliveries?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
          headers: c.campaignKey.auth,
        });
      expect(res.statusCode, res.body).toBe(200);
      seen.push(...res.json().data.map((d) => d.id));
      cursor = res.json().nextCursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(6);
    const failed = await call(t, {
      method: 'GET',
      url: `/api/campaigns/${c.campaign.id}/deliveries?status=failed`,
      headers: c.campaignKey.auth,
    });
    expect(failed.json().data).toHaveLength(1);
    expect(failed.json().data[0]).toMatchObject({ to: MAGIC_NUMBERS.notOnApp, status: 'failed', messageId: null });
    for (const q of ['status=nope', 'limit=0', 'cursor=abc']) {
      const bad = await call(t, {
        method: 'GET',
        url: `/api/campaigns/${c.campaign.id}/deliveries?${q}`,
        headers: c.campaignKey.auth,
      });
      expect(bad.statusCode, q).toBe(400);
      expect(bad.json()).toEqual(ENVELOPE);
    }
  });
});
