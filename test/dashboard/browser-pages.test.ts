import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listConversations } from '../../src/conversations/index.js';
import { createEndUser } from '../../src/end-users/end-user.service.js';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { listKeys } from '../../src/keys/key.service.js';
import { createSegment } from '../../src/segments/segment.service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { HAVE_CHROMIUM, IN_CI, launchChromium } from '../helpers/browser.js';
import { check, checkFit, DESKTOP, KEYS, PHONE, SHOTS, shot, signIn } from '../helpers/browser-checks.js';
import { makeCampaignTenant, phones, postRecipients } from '../helpers/campaigns.js';
import { makeUser } from '../helpers/dashboard.js';
import { sandboxInbound } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

/**
 * Every page of the dashboard in a real browser, at 1280 px and on a phone, with and without
 * JavaScript (the flows through them: browser.test.ts; a file of its own so that another fork runs
 * it meanwhile). Skipped as browser.test.ts is without chromium outside CI.
 */
/** The pages of the main navigation, in its order. */
const NAV_PAGES = [
  'Home',
  'Inbox',
  'Agents',
  'Conversations',
  'Campaigns',
  'End users',
  'Segments',
  'People',
  'Audit log',
  'Settings',
];

describe.skipIf(!HAVE_CHROMIUM && !IN_CI)('dashboard pages in a browser', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await createTestApp('sqlite', { env: { PARLEY_LAST_USED_FLUSH_MS: '100' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    // The sandbox's webhooks (inbound messages, statuses) come to this very server.
    t.ctx.messaging.sandbox?.setWebhookUrl(`${base}/webhooks/msgapp`);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('fits every page at 1280×800 and on a phone; links open their dialogs with JavaScript and without', async () => {
    const { ctx } = t;
    const tenant = await makeCampaignTenant(ctx);
    const { org, agent } = tenant;
    const owner = await makeUser(ctx, org.id, 'owner');
    await createEndpoint(ctx, {
      orgId: org.id,
      agentId: agent.id,
      url: 'https://bot.example.com/parley/hook',
    });
    await createEndUser(ctx.db, ctx.clock, org.id, {
      origin: 'manual',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
    });
    const campaignKey = (await listKeys(ctx.db, org.id)).find((k) => k.campaignId === tenant.campaign.id);
    const orgKey = (await listKeys(ctx.db, org.id)).find((k) => k.scope === 'organization');
    expect(
      await postRecipients(
        t,
        tenant.campaign.id,
        tenant.campaignKey.auth,
        phones(3).map((to) => ({ to })),
      ),
    ).toMatchObject({ statusCode: 202 });
    expect((await sandboxInbound(t, tenant.agentKey.auth, '+14155550177', 'Is my parcel on its way?')).statusCode).toBe(
      200,
    );
    let conversationId = '';
    await until(async () => {
      conversationId = (await listConversations(ctx.db, { orgId: org.id, agentId: null }, {})).data[0]?.id ?? '';
      return conversationId !== '';
    }, 'the conversation');

    const segment = await createSegment(ctx.db, ctx.clock, org.id, { name: 'Everyone', filter: {} });
    const campaign = `/dashboard/campaigns/${tenant.campaign.id}`;
    /** Every page, and every dialog a link opens: [name, address, the dialog it shows]. */
    const pages: [string, string, string?][] = [
      ['home', '/dashboard'],
      ['keys', KEYS],
      ['keys-create', `${KEYS}?create=1`, 'Create API key'],
      ['keys-revoke', `${KEYS}?revoke=${orgKey?.id}`, `Revoke API key ${orgKey?.label}?`],
      ['agents', '/dashboard/agents'],
      ['conversations', '/dashboard/conversations'],
      ['thread', `/dashboard/conversations/${conversationId}`],
      ['campaigns', '/dashboard/campaigns'],
      ['campaign', campaign],
      ['campaign-key', `${campaign}?create=1`, 'Create campaign key'],
      ['campaign-revoke', `${campaign}?revoke=${campaignKey?.id}`, `Revoke API key ${campaignKey?.label}?`],
      ['campaign-remove', `${campaign}?remove=1`, `Remove campaign ${tenant.campaign.name}?`],
      ['end-users', '/dashboard/end-users'],
      ['segments', '/dashboard/segments'],
      ['segment', `/dashboard/segments/${segment.id}`],
      ['sending-rules', '/dashboard/settings/sending'],
      ['audit', '/dashboard/audit'],
      ['settings', '/dashboard/settings'],
      ['opt-out', '/dashboard/settings/opt-out'],
      ['not-found', '/dashboard/nope'],
    ];

    for (const [size, options] of [
      ['desktop', DESKTOP],
      ['phone', PHONE],
    ] as const) {
      const context = await browser.newContext(options);
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      page.on('console', (msg) => {
        // The missing page answers 404 on purpose.
        if (msg.type() === 'error' && !/status of 404/.test(msg.text())) errors.push(msg.text());
      });
      await page.goto(`${base}/dashboard/login`);
      await check(page, `${size}-login`);
      await signIn(base, page, owner.email);
      for (const [name, address, dialog] of pages) {
        const answer = await page.goto(`${base}${address}`);
        expect(answer?.status(), address).toBe(name === 'not-found' ? 404 : 200);
        if (dialog) await page.getByRole('dialog', { name: dialog }).waitFor();
        await check(page, `${size}-${name}`);
      }
      expect(await page.getByRole('heading', { name: 'Not found', level: 1 }).count()).toBe(1);

      if (size === 'phone') {
        // The pages are in a menu: it opens, and every page of it is on the screen and reachable.
        const menu = page.locator('details.page-menu');
        await menu.locator('summary').tap();
        const nav = page.getByRole('navigation', { name: 'Main' });
        for (const link of NAV_PAGES) {
          const box = await nav.getByRole('link', { name: link, exact: true }).boundingBox();
          expect(box && box.x >= 0 && box.x + box.width <= 390 && box.y + box.height <= 844, link).toBe(true);
        }
        await check(page, 'phone-menu');
        await nav.getByRole('link', { name: 'Agents', exact: true }).tap();
        await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
        // The account menu: who is signed in, and Sign out, on the screen.
        await page.locator('details.account > summary').tap();
        const signOutBox = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
        expect(signOutBox && signOutBox.x >= 0 && signOutBox.x + signOutBox.width <= 390).toBe(true);
        await check(page, 'phone-account-menu');
      } else {
        // At 1280 px every page of the navigation fits on its own line.
        const heights = await page
          .getByRole('navigation', { name: 'Main' })
          .getByRole('link')
          .evaluateAll((links) =>
            links.map(
              (l) => (l as unknown as { getBoundingClientRect(): { height: number } }).getBoundingClientRect().height,
            ),
          );
        expect(heights.length).toBe(NAV_PAGES.length);
        // The API reference carries Parley's name and mark (a screenshot to look at).
        await page.goto(`${base}/api/docs`);
        await page.locator('.topbar img[src^="data:image/svg+xml"]').waitFor();
        expect(await page.title()).toBe('Parley API reference');
        await shot(page, 'desktop-api-reference', false);
        expect(Math.max(...heights)).toBeLessThan(1.6 * Math.min(...heights));
      }
      expect(errors, size).toEqual([]);
      await context.close();
    }

    // Without JavaScript, the same links show their dialogs too (the server renders them open).
    const noScript = await browser.newContext({ ...PHONE, javaScriptEnabled: false });
    const page = await noScript.newPage();
    await signIn(base, page, owner.email);
    for (const [name, address, dialog] of pages) {
      if (!dialog) continue;
      await page.goto(`${base}${address}`);
      await page.getByRole('dialog', { name: dialog }).waitFor();
      await checkFit(page, `no-script ${name}`);
    }
    await noScript.close();
  }, 300_000);
});
