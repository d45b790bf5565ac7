import { describe, expect, it } from 'vitest';
import { DIALECTS, type TestApp } from '../helpers/app.js';
import { acceptedPerRecipient, makeCampaignTenant, phones } from '../helpers/campaigns.js';
import { runCli } from '../helpers/cli.js';
import { call } from '../helpers/http.js';
import { createMessagingApp, type MessagingTestApp } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

type Tenant = Awaited<ReturnType<typeof makeCampaignTenant>>;

/** `count` members tagged `tag` (every fifth opted out, one more without a phone) and one end user outside it. */
async function members(t: TestApp, c: Tenant, tag: string, count: number) {
  const numbers = phones(count);
  const endUsers = [
    ...numbers.map((phone, i) => ({
      phone,
      tags: [tag],
      ...(i % 5 === 0 ? { consent: { msgapp: { status: 'denied' as const } } } : {}),
    })),
    { email: `nophone.${tag}@example.com`, tags: [tag] },
    { phone: phones(1)[0], tags: ['other'] },
  ];
  const made = await call(t, {
    method: 'POST',
    url: '/api/endusers/batch',
    headers: c.orgKey.auth,
    payload: { origin: 'imported', endUsers },
  });
  expect(made.json().created).toBe(count + 2);
  const segment = await call(t, {
    method: 'POST',
    url: '/api/segments',
    headers: c.orgKey.auth,
    payload: { name: tag, filter: { tags: { any: [tag] } } },
  });
  expect(segment.statusCode).toBe(201);
  return { segmentId: segment.json().id as string, reachable: numbers.filter((_, i) => i % 5 !== 0) };
}

const schedule = (t: TestApp, c: Tenant, body: unknown) =>
  call(t, { method: 'POST', url: `/api/campaigns/${c.campaign.id}/sends`, headers: c.campaignKey.auth, payload: body });
const read = (t: TestApp, c: Tenant, id: string, method: 'GET' | 'DELETE' = 'GET') =>
  call(t, { method, url: `/api/campaigns/${c.campaign.id}/sends/${id}`, headers: c.campaignKey.auth });

describe.each(DIALECTS)('sending a campaign to a segment (%s)', (dialect) => {
  it('now: every member becomes one delivery, minus the opted out and those without a phone; a canceled send sends nothing', async () => {
    const t = await createMessagingApp(dialect);
    try {
      const c = await makeCampaignTenant(t.ctx, { name: 'order_update', language: 'en_US' });
      const { segmentId, reachable } = await members(t, c, `now-${dialect}`, 20);
      const res = await schedule(t, c, { segment: segmentId, parameters: { header: ['Hi'], body: ['Ada', '42'] } });
      expect(res.statusCode, res.body).toBe(202);
      const send = res.json();
      expect(send).toMatchObject({ id: expect.stringMatching(/^snd_/), status: 'scheduled', segment: segmentId });
      await until(async () => (await read(t, c, send.id)).json().status === 'done', 'the send done');
      const done = (await read(t, c, send.id)).json();
      expect(done.counts).toEqual({ members: 21, accepted: 16, duplicates: 0, optedOut: 4, skipped: 1 });
      expect(done.startedAt).toEqual(expect.any(Number));
      await until(async () => (await acceptedPerRecipient(t, c.agent.id)).size === 16, 'all 16 sent');
      const sent = await acceptedPerRecipient(t, c.agent.id);
      expect([...sent.keys()].sort()).toEqual([...reachable].sort());
      expect([...sent.values()].every((n) => n === 1)).toBe(true);
      // What reached the provider carries the send's parameters.
      const log = await call(t, {
        method: 'GET',
        url: `/api/sandbox/messages?to=${encodeURIComponent(reachable[0] ?? '')}`,
        headers: c.orgKey.auth,
      });
      expect(JSON.stringify(log.json().data[0].payload)).toContain('"Ada"');
      // Once it ran it cannot be canceled.
      const late = await read(t, c, send.id, 'DELETE');
      expect(late.statusCode).toBe(409);
      expect(late.json()).toEqual({ success: false, error: expect.stringContaining('can no longer be canceled') });

      // A send an hour ahead, canceled; a later one for a second campaign runs: the first sent nothing.
      const ahead = await schedule(t, c, { segment: segmentId, at: Date.now() + 3_600_000 });
      expect(ahead.json().status).toBe('scheduled');
      const canceled = await read(t, c, ahead.json().id, 'DELETE');
      expect(canceled.json()).toMatchObject({ status: 'canceled', finishedAt: expect.any(Number) });
      expect((await read(t, c, ahead.json().id, 'DELETE')).json().status).toBe('canceled');
      const soon = await schedule(t, c, { segment: segmentId, at: Date.now() + 1_000 });
      const cancelSoon = await read(t, c, soon.json().id, 'DELETE');
      expect(cancelSoon.json().status).toBe('canceled');
      const c2 = await makeCampaignTenant(t.ctx);
      const other = await members(t, c2, `after-${dialect}`, 2);
      const after = await schedule(t, c2, { segment: other.segmentId, at: Date.now() + 1_500 });
      await until(async () => (await read(t, c2, after.json().id)).json().status === 'done', 'the later send done');
      expect((await read(t, c, soon.json().id)).json()).toMatchObject({ status: 'canceled', counts: { members: 0 } });
      const deliveries = await t.ctx.db
        .selectFrom('campaign_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('campaign_id', '=', c.campaign.id)
        .executeTakeFirst();
      expect(Number(deliveries?.n)).toBe(16);
    } finally {
      await t.close();
    }
  }, 120_000);

  it('refuses what it cannot do in the campaign envelope: other keys, unknown segments, bad bodies', async () => {
    const t = await createMessagingApp(dialect);
    try {
      const c = await makeCampaignTenant(t.ctx);
      const other = await makeCampaignTenant(t.ctx);
      const { segmentId } = await members(t, c, `refuse-${dialect}`, 1);
      const cases: [Record<string, string>, unknown, number][] = [
        [c.orgKey.auth, { segment: segmentId }, 403],
        [other.campaignKey.auth, { segment: segmentId }, 403],
        [c.campaignKey.auth, { segment: 'seg_nope' }, 404],
        [c.campaignKey.auth, {}, 400],
        [c.campaignKey.auth, { segment: segmentId, at: 'tomorrow' }, 400],
        [c.campaignKey.auth, { segment: segmentId, at: Date.now() + 400 * 86_400_000 }, 400],
        [c.campaignKey.auth, { segment: segmentId, parameters: { body: [' '] } }, 400],
        [c.campaignKey.auth, { segment: segmentId, extra: 1 }, 400],
      ];
      for (const [auth, payload, status] of cases) {
        const res = await call(t, {
          method: 'POST',
          url: `/api/campaigns/${c.campaign.id}/sends`,
          headers: auth,
          payload,
        });
        expect(res.statusCode, JSON.stringify(payload)).toBe(status);
        expect(res.json(), JSON.stringify(payload)).toEqual({ success: false, error: expect.any(String) });
      }
      // The command line schedules one the same way, and shows it.
      const cli = await runCli(
        [
          'campaign',
          'send',
          '--org',
          c.org.id,
          '--id',
          c.campaign.id,
          '--segment',
          segmentId,
          '--at',
          '2027-06-01T10:00:00Z',
          '--json',
        ],
        t.env,
      );
      expect(cli.code, cli.stderr).toBe(0);
      const scheduled = JSON.parse(cli.stdout);
      expect(scheduled).toMatchObject({
        status: 'scheduled',
        at: Date.parse('2027-06-01T10:00:00Z'),
        segment: segmentId,
      });
      const shown = await runCli(
        ['campaign', 'send-show', '--org', c.org.id, '--id', c.campaign.id, '--send', scheduled.id],
        t.env,
      );
      expect(shown.stdout).toContain(`${scheduled.id} to segment ${segmentId}`);
      expect((await read(t, c, scheduled.id, 'DELETE')).json().status).toBe('canceled');
      const bad = await runCli(
        ['campaign', 'send', '--org', c.org.id, '--id', c.campaign.id, '--segment', segmentId, '--at', 'soon'],
        t.env,
      );
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('--at must be an ISO 8601 time');
      // The other organization's segment is not found.
      const foreign = await members(t, other, `foreign-${dialect}`, 1);
      expect((await schedule(t, c, { segment: foreign.segmentId })).statusCode).toBe(404);
      expect((await read(t, c, 'snd_nope')).statusCode).toBe(404);
      const none = await t.ctx.db
        .selectFrom('segment_sends')
        .select('status')
        .where('campaign_id', '=', c.campaign.id)
        .execute();
      // Only the one the command line made, canceled: nothing refused was stored.
      expect(none).toEqual([{ status: 'canceled' }]);
    } finally {
      await t.close();
    }
  }, 60_000);

  it.skipIf(dialect !== 'postgres')(
    'a send scheduled seconds ahead runs once with three nodes up: each member reached once',
    async () => {
      const a = await createMessagingApp(dialect);
      const nodes: MessagingTestApp[] = [a];
      try {
        nodes.push(await createMessagingApp(dialect, { shareWith: a, ownDataDir: true }));
        nodes.push(await createMessagingApp(dialect, { shareWith: a, ownDataDir: true }));
        const c = await makeCampaignTenant(a.ctx);
        const { segmentId, reachable } = await members(a, c, 'three-nodes', 250);
        const res = await schedule(a, c, { segment: segmentId, at: Date.now() + 2_000 });
        expect(res.statusCode).toBe(202);
        await until(async () => (await read(a, c, res.json().id)).json().status === 'done', 'the send done', 60_000);
        expect((await read(a, c, res.json().id)).json().counts).toEqual({
          members: 251,
          accepted: 200,
          duplicates: 0,
          optedOut: 50,
          skipped: 1,
        });
        await until(async () => (await acceptedPerRecipient(a, c.agent.id)).size === 200, 'all 200 sent', 90_000);
        const sent = await acceptedPerRecipient(a, c.agent.id);
        expect([...sent.keys()].sort()).toEqual([...reachable].sort());
        expect([...sent.values()].filter((n) => n !== 1)).toEqual([]);
        const rows = await a.ctx.db
          .selectFrom('campaign_deliveries')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('campaign_id', '=', c.campaign.id)
          .executeTakeFirst();
        expect(Number(rows?.n)).toBe(200);
        expect(nodes.reduce((n, node) => n + node.sandbox.received.length, 0)).toBe(200);
      } finally {
        for (const node of nodes.slice(1).reverse()) await node.close();
        await a.close();
      }
    },
    180_000,
  );
});
