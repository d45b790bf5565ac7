import { describe, expect, it } from 'vitest';
import { orgOverview } from '../../src/analytics/analytics.service.js';
import { DIALECTS } from '../helpers/app.js';
import { campaignCounts, makeCampaignTenant, phones, postRecipients } from '../helpers/campaigns.js';
import { runCli } from '../helpers/cli.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { call } from '../helpers/http.js';
import { createMessagingApp, sandboxInbound } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

const NOT_ON_APP = '+15005550001';
const KEYS = ['sent', 'delivered', 'read', 'replied', 'failed'] as const;

describe.each(DIALECTS)('campaign stats and the overview (%s)', (dialect) => {
  it('count the funnel as it happens; buckets add up to the totals; replied once per delivery within 72 h', async () => {
    const t = await createMessagingApp(dialect);
    try {
      const c = await makeCampaignTenant(t.ctx);
      const to = phones(4);
      const posted = await postRecipients(
        t,
        c.campaign.id,
        c.campaignKey.auth,
        [...to, NOT_ON_APP].map((x) => ({ to: x })),
      );
      expect(posted.json().accepted).toBe(5);
      await until(async () => {
        const n = await campaignCounts(t, c.campaign.id, c.campaignKey.auth);
        return n.read === 4 && n.failed === 1;
      }, 'four read, one failed');
      // Two replies from one end user, one from another: two replied deliveries.
      for (const [from, text] of [
        [to[0], 'Thanks!'],
        [to[0], 'Again'],
        [to[1], 'Yes please'],
      ] as const) {
        expect((await sandboxInbound(t, c.agentKey.auth, from ?? '', text)).statusCode).toBe(200);
      }
      const stats = async (bucket: string) => {
        const res = await call(t, {
          method: 'GET',
          url: `/api/campaigns/${c.campaign.id}/stats?bucket=${bucket}`,
          headers: c.campaignKey.auth,
        });
        expect(res.statusCode, res.body).toBe(200);
        return res.json();
      };
      await until(async () => (await stats('hour')).totals.replied === 2, 'two replies counted');
      for (const bucket of ['hour', 'day']) {
        const s = await stats(bucket);
        expect(s.totals).toEqual({ accepted: 5, sent: 4, delivered: 4, read: 4, replied: 2, failed: 1 });
        for (const key of KEYS) {
          expect(
            s.buckets.reduce((sum: number, b: Record<string, number>) => sum + (b[key] ?? 0), 0),
            key,
          ).toBe(s.totals[key]);
        }
        const size = bucket === 'hour' ? 3_600_000 : 86_400_000;
        for (const b of s.buckets) expect(b.start % size).toBe(0);
        expect(s.failures).toEqual([{ reason: expect.stringMatching(/./), count: 1 }]);
      }
      const bad = await call(t, {
        method: 'GET',
        url: `/api/campaigns/${c.campaign.id}/stats?bucket=week`,
        headers: c.campaignKey.auth,
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json()).toEqual({ success: false, error: expect.any(String) });
      const other = await call(t, {
        method: 'GET',
        url: `/api/campaigns/${c.campaign.id}/stats`,
        headers: c.orgKey.auth,
      });
      expect(other.statusCode).toBe(403);

      // The overview: today's figures; an opt-out counted when consent turns denied.
      const eu = await call(t, {
        method: 'GET',
        url: `/api/endusers?phone=${encodeURIComponent(to[2] ?? '')}`,
        headers: c.orgKey.auth,
      });
      const euId = eu.json().data[0]._id;
      await call(t, {
        method: 'PATCH',
        url: `/api/endusers/${euId}`,
        headers: c.orgKey.auth,
        payload: { consent: { msgapp: { status: 'denied' } } },
      });
      await call(t, {
        method: 'PATCH',
        url: `/api/endusers/${euId}`,
        headers: c.orgKey.auth,
        payload: { consent: { msgapp: { status: 'denied', source: 'again' } } },
      });
      const overview = await orgOverview(t.ctx.db, c.org.id, 7, Date.now());
      expect(overview.days).toHaveLength(7);
      const today = overview.days[6];
      expect(today).toMatchObject({ sent: 4, delivered: 4, read: 4, failed: 1, received: 3, optouts: 1 });
      expect(today?.conversations).toBeGreaterThanOrEqual(4);
      expect(overview.totals.sent).toBe(4);
      expect(overview.failures).toHaveLength(1);

      // The dashboard draws the same figures: the overview on the home page, the funnel on the campaign's page.
      const owner = await signInAs(t.app, (await makeUser(t.ctx, c.org.id, 'owner')).email);
      const home = (await owner.get('/dashboard')).body;
      const day = new Date().toISOString().slice(5, 10);
      expect(home).toContain('<h2 id="overview-title">The last 7 days</h2>');
      const bar = (html: string, chart: string, label: string) =>
        new RegExp(`id="${chart}"[\\s\\S]*?data-label="${label}" data-value="(\\d+)"`).exec(html)?.[1];
      expect(bar(home, 'chart-sent', day)).toBe('4');
      expect(bar(home, 'chart-received', day)).toBe('3');
      expect(bar(home, 'chart-optouts', day)).toBe('1');
      expect(home).toContain('<caption>Messages sent</caption>');
      const month = (await owner.get('/dashboard?days=30')).body;
      expect(
        month.match(/<rect x="[^"]+" y="[^"]+" width="[^"]+" height="[^"]+" data-label="\d\d-\d\d"/g),
      ).toHaveLength(8 * 30);
      const page = (await owner.get(`/dashboard/campaigns/${c.campaign.id}`)).body;
      for (const [label, value] of [
        ['Accepted', 5],
        ['Sent', 4],
        ['Delivered', 4],
        ['Read', 4],
        ['Replied (within 72 h)', 2],
      ] as const) {
        expect(bar(page, 'chart-funnel', label.replace(/[()]/g, '\\$&'))).toBe(String(value));
      }
      expect(page).toContain('Failures by reason (1 in all)');

      // The CSV of the deliveries, from the page and from the command line: the same.
      const csv = await owner.get(`/dashboard/campaigns/${c.campaign.id}/deliveries.csv`);
      expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(csv.headers['content-disposition']).toBe(`attachment; filename="${c.campaign.id}-deliveries.csv"`);
      const lines = csv.body.trim().split('\n');
      expect(lines[0]).toBe('id,to,status,error,endUserId,conversationId,messageId,createdAt,sentAt,updatedAt');
      expect(lines).toHaveLength(6);
      expect(lines.filter((l) => l.includes(',read,'))).toHaveLength(4);
      expect(lines.find((l) => l.includes(NOT_ON_APP))).toMatch(/,failed,"?The provider rejected/);
      const cli = await runCli(['campaign', 'export', '--org', c.org.id, '--id', c.campaign.id], t.env);
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toBe(csv.body);
    } finally {
      await t.close();
    }
  }, 120_000);
});
