/**
 * Campaign delivery under load and failure: pacing per sending number measured, a sandbox that
 * refuses past its throughput, a restart in the middle of a 1,000-recipient campaign, and two
 * nodes on one PostgreSQL schema working one campaign. Each ends with every delivery sent once.
 */

import { describe, expect, it } from 'vitest';
import { createCampaign } from '../../src/campaigns/campaign.service.js';
import { addNumber, assignNumber } from '../../src/numbers/number.service.js';
import { DIALECTS, type TestApp } from '../helpers/app.js';
import {
  acceptedPerRecipient,
  campaignCounts,
  makeCampaignTenant,
  phones,
  postRecipients,
} from '../helpers/campaigns.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import {
  createMessagingApp,
  createQuietTestApp,
  dropTestData,
  postWebhook,
  randomPhone,
  startFakeProvider,
  statusPayload,
  templateSend,
} from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

/** Deliveries handed to the provider (any status past queued, failures aside). */
async function handed(t: TestApp, campaignId: string, auth: Record<string, string>): Promise<number> {
  const n = await campaignCounts(t, campaignId, auth);
  return n.sending + n.sent + n.delivered + n.read;
}

function expectEachOnce(accepted: Map<string, number>, recipients: readonly string[]) {
  expect(accepted.size).toBe(recipients.length);
  const twice = [...accepted.entries()].filter(([, n]) => n !== 1);
  expect(twice).toEqual([]);
  for (const to of recipients) expect(accepted.get(to)).toBe(1);
}

describe.each(DIALECTS)('campaign delivery (%s)', (dialect) => {
  it('paces sends per number: 100 recipients at 20 per second take about 5 seconds', async () => {
    const t = await createMessagingApp(dialect, { env: { PARLEY_NUMBER_MPS: '20' } });
    try {
      const c = await makeCampaignTenant(t.ctx);
      const recipients = phones(100);
      const started = Date.now();
      const res = await postRecipients(
        t,
        c.campaign.id,
        c.campaignKey.auth,
        recipients.map((to) => ({ to })),
      );
      expect(res.json().accepted).toBe(100);
      await until(async () => (await handed(t, c.campaign.id, c.campaignKey.auth)) === 100, 'all 100 handed over');
      const took = Date.now() - started;
      // 99 gaps of 50 ms: 4.95 s at the least.
      expect(took).toBeGreaterThanOrEqual(4_500);
      // And no burst: 31 sends in a row span a second at least (1.5 s ideally; the stored times jitter).
      const times = (
        await t.ctx.db
          .selectFrom('messages')
          .select('created_at')
          .where('agent_id', '=', c.agent.id)
          .orderBy('created_at')
          .execute()
      ).map((r) => Number(r.created_at));
      for (let i = 0; i + 30 < times.length; i++) {
        expect((times[i + 30] ?? 0) - (times[i] ?? 0)).toBeGreaterThanOrEqual(1_000);
      }
      // And not far slower than the pace where the machine let it run: a pacer at a quarter of it
      // (5 per second) spans 6 s for any 31 sends; at the pace the fastest 31 span about 1.5 s.
      // (A wall-clock bound on the whole run failed on a starved machine, which slows every send.)
      const spans = times.slice(30).map((at, i) => at - (times[i] ?? 0));
      expect(Math.min(...spans)).toBeLessThan(5_000);
      expectEachOnce(await acceptedPerRecipient(t, c.agent.id), recipients);
    } finally {
      await t.close();
    }
  }, 60_000);

  it("counts the number's interactive sends: they go at once, and campaign sends make room for them", async () => {
    const t = await createMessagingApp(dialect, { env: { PARLEY_NUMBER_MPS: '4' } });
    try {
      const c = await makeCampaignTenant(t.ctx);
      // 24 sends through the send endpoint at once: 6 s of the number's pace, yet none waits for it.
      const started = Date.now();
      const sends = await Promise.all(
        Array.from({ length: 24 }, () =>
          call(t, { method: 'POST', url: '/api/channels/send', headers: c.agentKey.auth, payload: templateSend() }),
        ),
      );
      for (const res of sends) expect(res.statusCode, res.body).toBe(200);
      expect(Date.now() - started).toBeLessThan(5_000);
      const res = await postRecipients(
        t,
        c.campaign.id,
        c.campaignKey.auth,
        phones(3).map((to) => ({ to })),
      );
      expect(res.json().accepted).toBe(3);
      await until(async () => (await handed(t, c.campaign.id, c.campaignKey.auth)) === 3, 'all 3 handed over');
      const times = async (campaign: boolean) =>
        (
          await t.ctx.db
            .selectFrom('messages as m')
            .leftJoin('campaign_deliveries as d', 'd.message_id', 'm.id')
            .select(['m.created_at', 'd.id as delivery'])
            .where('m.agent_id', '=', c.agent.id)
            .orderBy('m.created_at')
            .execute()
        )
          .filter((r) => (r.delivery !== null) === campaign)
          .map((r) => Number(r.created_at));
      const interactive = await times(false);
      const campaign = await times(true);
      expect(interactive).toHaveLength(24);
      expect(campaign).toHaveLength(3);
      // The 24 took 24 slots of 250 ms from the first of them on: the campaign's first send comes after.
      expect((campaign[0] ?? 0) - (interactive[0] ?? 0)).toBeGreaterThanOrEqual(24 * 250 - 50);
    } finally {
      await t.close();
    }
  }, 60_000);

  it('slows down when the provider answers 130429 (sandbox at 10/s, pace at 40/s) and still sends each once', async () => {
    const t = await createMessagingApp(dialect, { env: { PARLEY_NUMBER_MPS: '40', PARLEY_SANDBOX_MPS: '10' } });
    try {
      const c = await makeCampaignTenant(t.ctx);
      const recipients = phones(40);
      await postRecipients(
        t,
        c.campaign.id,
        c.campaignKey.auth,
        recipients.map((to) => ({ to })),
      );
      await until(
        async () => (await campaignCounts(t, c.campaign.id, c.campaignKey.auth)).read === 40,
        'all read',
        60_000,
      );
      const refused = t.sandbox.received.length - 40;
      expect(refused).toBeGreaterThan(0);
      expectEachOnce(await acceptedPerRecipient(t, c.agent.id), recipients);
    } finally {
      await t.close();
    }
  }, 90_000);

  it('a restart in the middle of a 1,000-recipient campaign ends with 1,000 deliveries, each sent once', async () => {
    // A send to the sandbox (in this process) waits up to a minute for its answer: on a starved
    // machine a 10 s wait can pass, and a send whose outcome is unknown is never resent.
    const env = { PARLEY_NUMBER_MPS: '150', PARLEY_PROVIDER_TIMEOUT_MS: '60000' };
    const first = await createMessagingApp(dialect, { env });
    let second: TestApp | undefined;
    try {
      const c = await makeCampaignTenant(first.ctx);
      const recipients = phones(1000);
      const res = await postRecipients(
        first,
        c.campaign.id,
        c.campaignKey.auth,
        recipients.map((to) => ({ to })),
      );
      expect(res.json().accepted).toBe(1000);
      await until(async () => (await handed(first, c.campaign.id, c.campaignKey.auth)) >= 200, '200 sends', 90_000);
      // The server stops mid-campaign; a new one starts on the same data.
      await first.app.close();
      await first.ctx.close();
      second = await createMessagingApp(dialect, { env, shareWith: first });
      const s = second;
      const midway = await handed(s, c.campaign.id, c.campaignKey.auth);
      expect(midway).toBeGreaterThanOrEqual(200);
      expect(midway).toBeLessThan(1000);
      await until(
        async () => (await handed(s, c.campaign.id, c.campaignKey.auth)) === 1000,
        'all 1,000 handed',
        90_000,
      );
      const counts = await campaignCounts(s, c.campaign.id, c.campaignKey.auth);
      expect(counts.queued + counts.failed).toBe(0);
      expectEachOnce(await acceptedPerRecipient(s, c.agent.id), recipients);
      const deliveries = await s.ctx.db
        .selectFrom('campaign_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('campaign_id', '=', c.campaign.id)
        .executeTakeFirstOrThrow();
      expect(Number(deliveries.n)).toBe(1000);
    } finally {
      await second?.close();
      await dropTestData(first);
    }
  }, 180_000);

  it.skipIf(dialect !== 'postgres')(
    'two nodes on one schema work one campaign and send each delivery once',
    async () => {
      const env = { PARLEY_NUMBER_MPS: '100' };
      const a = await createMessagingApp(dialect, { env });
      const b = await createMessagingApp(dialect, { env, shareWith: a, ownDataDir: true });
      try {
        const c = await makeCampaignTenant(a.ctx);
        const recipients = phones(400);
        const res = await postRecipients(
          a,
          c.campaign.id,
          c.campaignKey.auth,
          recipients.map((to) => ({ to })),
        );
        expect(res.json().accepted).toBe(400);
        await until(async () => (await handed(a, c.campaign.id, c.campaignKey.auth)) === 400, 'all 400 handed', 90_000);
        expectEachOnce(await acceptedPerRecipient(a, c.agent.id), recipients);
        // Both nodes sent some.
        expect(a.sandbox.received.length).toBeGreaterThan(0);
        expect(b.sandbox.received.length).toBeGreaterThan(0);
      } finally {
        await b.close();
        await a.close();
      }
    },
    120_000,
  );
});

describe.each(DIALECTS)('campaign delivery with an unknown outcome (%s)', (dialect) => {
  it('never resends a send whose answer was lost; a status webhook settles it, else it fails after the set time', async () => {
    const provider = await startFakeProvider(() => 'hang');
    const t = await createQuietTestApp(dialect, {
      env: {
        PARLEY_PROVIDER_BASE_URL: provider.url,
        PARLEY_PROVIDER_TIMEOUT_MS: '300',
        PARLEY_CAMPAIGN_UNCONFIRMED_MS: '1500',
      },
    });
    try {
      const tenant = await makeTenant(t.ctx);
      const number = await addNumber(t.ctx.db, t.ctx.clock, t.ctx.messaging.secrets, {
        orgId: tenant.org.id,
        phone: randomPhone(),
        provider: 'cloud',
        phoneNumberId: '106540352242922',
        accessToken: 'EAAG-secret-token',
      });
      await assignNumber(t.ctx.db, tenant.org.id, tenant.agent.id, number.phone);
      const campaign = await createCampaign(t.ctx.db, t.ctx.clock, {
        orgId: tenant.org.id,
        name: 'Lost answers',
        agentId: tenant.agent.id,
        template: 'hello_world',
        language: 'en_US',
      });
      const key = await makeKey(t.ctx, tenant.org.id, { scope: 'campaign', campaignId: campaign.id });
      const [settled, lost] = phones(2);
      const res = await postRecipients(t, campaign.id, key.auth, [{ to: settled }, { to: lost }]);
      expect(res.json().accepted).toBe(2);
      await until(async () => (await campaignCounts(t, campaign.id, key.auth)).sending === 2, 'both sending');
      // The provider's status webhook for the first, carrying our message ID as callback data.
      const first = await t.ctx.db
        .selectFrom('messages')
        .select(['id', 'status'])
        .where('to_phone', '=', settled ?? '')
        .executeTakeFirstOrThrow();
      expect(first.status).toBe('unconfirmed');
      const hook = await postWebhook(
        t,
        statusPayload('106540352242922', [
          { id: 'wamid.LATE1', status: 'delivered', timestamp: Date.now(), callback: first.id },
        ]),
      );
      expect(hook.statusCode).toBe(200);
      await until(
        async () => (await campaignCounts(t, campaign.id, key.auth)).failed === 1,
        'the other failed',
        20_000,
      );
      const list = await call(t, {
        method: 'GET',
        url: `/api/campaigns/${campaign.id}/deliveries`,
        headers: key.auth,
      });
      const byTo = new Map(list.json().data.map((d: { to: string }) => [d.to, d]));
      expect(byTo.get(settled)).toMatchObject({ status: 'delivered', messageId: 'wamid.LATE1', error: null });
      expect(byTo.get(lost)).toMatchObject({ status: 'failed', messageId: null });
      expect((byTo.get(lost) as { error: string }).error).toMatch(
        /unknown .* no status arrived .*; it was not sent again/,
      );
      // One provider call per recipient, never a second.
      expect(provider.requests.map((r) => r.body.to).sort()).toEqual([settled, lost].sort());
    } finally {
      await t.close();
      await provider.close();
    }
  }, 60_000);
});
