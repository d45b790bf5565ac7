import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndUsers } from '../../src/end-users/end-user.service.js';
import { HAVE_CHROMIUM, IN_CI, launchChromium } from '../helpers/browser.js';
import { check, DESKTOP, PHONE, SHOTS, signIn } from '../helpers/browser-checks.js';
import { campaignCounts, makeCampaignTenant, phones, postRecipients } from '../helpers/campaigns.js';
import { makeUser } from '../helpers/dashboard.js';
import { call } from '../helpers/http.js';
import { createMessagingApp, type MessagingTestApp } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

/**
 * Audiences in a real browser, at 1280 px and on a phone: the overview's charts drawn from known
 * data (a bar checked against the API), the segment builder's live count, a send scheduled from a
 * campaign's page and seen to run, and the campaign's funnel. Screenshots in test-output/screenshots.
 */
describe.skipIf(!HAVE_CHROMIUM && !IN_CI)('segments, sends and analytics in a browser', () => {
  let t: MessagingTestApp;
  let browser: Browser;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await createMessagingApp('sqlite');
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('the overview and the funnel show what the API counts; the builder counts live; a send runs from the page', async () => {
    const { ctx } = t;
    const c = await makeCampaignTenant(ctx);
    await postRecipients(
      t,
      c.campaign.id,
      c.campaignKey.auth,
      phones(3).map((to) => ({ to })),
    );
    await until(async () => (await campaignCounts(t, c.campaign.id, c.campaignKey.auth)).read === 3, 'three read');
    await createEndUsers(ctx.db, ctx.clock, c.org.id, {
      origin: 'manual',
      endUsers: phones(4).map((phone, i) => ({
        phone,
        tags: i < 2 ? ['vip'] : ['new'],
        attributes: { plan: i === 0 ? 'pro' : 'free' },
      })),
    });
    const stats = (
      await call(t, { method: 'GET', url: `/api/campaigns/${c.campaign.id}/stats`, headers: c.campaignKey.auth })
    ).json();
    expect(stats.totals.sent).toBe(3);
    const owner = await makeUser(ctx, c.org.id, 'owner');
    const today = new Date().toISOString().slice(5, 10);

    for (const [size, options] of [
      ['desktop', DESKTOP],
      ['phone', PHONE],
    ] as const) {
      const context = await browser.newContext(options);
      const page = await context.newPage();
      await signIn(t.url, page, owner.email);
      // The overview: today's bar of messages sent is the campaign's sent count, as the API says.
      const bar = page.locator(`#chart-sent rect[data-label="${today}"]`);
      const now = (
        await call(t, { method: 'GET', url: `/api/campaigns/${c.campaign.id}/stats`, headers: c.campaignKey.auth })
      ).json();
      expect(Number(await bar.getAttribute('data-value'))).toBe(now.totals.sent);
      expect(Number(await bar.getAttribute('height'))).toBeGreaterThan(0);
      await page.locator('#chart-sent summary').click();
      await expect.poll(() => page.locator('#chart-sent table').isVisible()).toBe(true);
      await check(page, `audiences-${size}-overview`);

      // The builder: the count follows the fields.
      await page.goto(`${t.url}/dashboard/segments`);
      await expect.poll(() => page.locator('#segment-count').textContent()).toContain('7 end users match');
      await page.getByLabel('Tagged with any of (comma-separated)').fill('vip');
      await expect.poll(() => page.locator('#segment-count').textContent()).toContain('2 end users match');
      await page.getByLabel('Attributes, one key:value a line').fill('plan:pro');
      await expect.poll(() => page.locator('#segment-count').textContent()).toContain('1 end user matches');
      await check(page, `audiences-${size}-segment-builder`);
      if (size === 'desktop') {
        await page.getByLabel('Attributes, one key:value a line').fill('');
        await page.getByLabel('Name').fill('VIPs');
        await page.getByRole('button', { name: 'Save segment' }).click();
        await page.getByRole('heading', { name: 'VIPs', level: 1 }).waitFor();
        // A send to it, now, from the campaign's page; the table follows it to Done.
        await page.goto(`${t.url}/dashboard/campaigns/${c.campaign.id}`);
        await page.getByLabel('Segment', { exact: true }).selectOption({ label: 'VIPs (2 when last counted)' });
        await page.getByLabel('Now', { exact: true }).check();
        await page.getByRole('button', { name: 'Schedule send' }).click();
        await expect
          .poll(() => page.locator('#campaign-sends .send-status').first().textContent(), { timeout: 30_000 })
          .toBe('Done');
        // The two sends finish before the next pass reads the figures again.
        await until(async () => (await campaignCounts(t, c.campaign.id, c.campaignKey.auth)).read === 5, 'five read');
      } else {
        await page.goto(`${t.url}/dashboard/campaigns/${c.campaign.id}`);
      }
      // The funnel: the accepted bar is what the API counts.
      const fresh = (
        await call(t, { method: 'GET', url: `/api/campaigns/${c.campaign.id}/stats`, headers: c.campaignKey.auth })
      ).json();
      expect(Number(await page.locator('#chart-funnel rect[data-label="Accepted"]').getAttribute('data-value'))).toBe(
        fresh.totals.accepted,
      );
      await check(page, `audiences-${size}-campaign`);
      await context.close();
    }
  }, 180_000);
});
