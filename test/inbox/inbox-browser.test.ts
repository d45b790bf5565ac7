import { mkdirSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setHoldingText } from '../../src/agents/agent.service.js';
import { createUser } from '../../src/dashboard/user.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, PG_URL, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { CHROMIUM, HAVE_CHROMIUM, IN_CI, launchChromium } from '../helpers/browser.js';
import { PHONE, SHOTS, shot } from '../helpers/browser-checks.js';
import { makeUser, PASSWORD } from '../helpers/dashboard.js';
import { makeTrigger } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import { pngOf } from '../helpers/media.js';
import { inboundPayload, makeSendingTenant, randomPhone, sandboxInbound, signedWebhook } from '../helpers/messaging.js';
import { sandboxLog } from '../helpers/sandbox-log.js';

/**
 * The inbox in a real browser (Debian's chromium driven by playwright-core): two people of one
 * organization at once, one at 1280 px and one on a phone's 390 px, with axe on every state shown;
 * live updates within two seconds; another organization's person sees nothing. On PostgreSQL, a
 * message applied by one node shows on a page another node serves.
 */
const DESKTOP = { viewport: { width: 1280, height: 800 } };
/** The live updates' promise: a change shows on every open page within this. */
const LIVE_MS = 2_000;

if (!HAVE_CHROMIUM && !IN_CI) process.stderr.write(`inbox-browser.test.ts skipped: no chromium at ${CHROMIUM}\n`);

/** No serious or critical axe violation, nothing wider than the screen, and a screenshot. */
async function check(page: Page, name: string) {
  const width = page.viewportSize()?.width ?? 1280;
  await shot(page, name);
  expect(await seriousViolations(page), `accessibility of ${name}`).toEqual([]);
  const scrollWidth = await page.evaluate(
    () =>
      (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
        .scrollWidth,
  );
  expect(scrollWidth, `width of ${name}`).toBeLessThanOrEqual(width);
}

async function signIn(context: BrowserContext, base: string, email: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${base}/dashboard/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect.poll(() => new URL(page.url()).pathname).not.toBe('/dashboard/login');
  return page;
}

const baseOf = (t: TestApp) => {
  const address = t.app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
};

describe.skipIf(!HAVE_CHROMIUM && !IN_CI)('the inbox in a browser', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await createTestApp('sqlite', { env: { PARLEY_JOB_POLL_MS: '20' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = baseOf(t);
    t.ctx.messaging.sandbox?.setWebhookUrl(`${base}/webhooks/msgapp`);
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** What reached the provider from the organization's numbers: the sandbox's log through the API. */
  const sentBodies = async (auth: Record<string, string>) =>
    (await sandboxLog(t, auth, { limit: 200 })).map(
      (item) =>
        ({ ...item.payload, to: item.to }) as {
          to?: string | null;
          type?: string;
          text?: { body?: string };
          template?: { name?: string };
        },
    );

  it('two people answer together: live list and thread, reply with Enter, take over, assign, notes, hand back, close, the template path', async () => {
    const x = await makeSendingTenant(t.ctx);
    await makeTrigger(t.ctx, x.org.id, x.agent.id, 'order_shipped', 'order_update');
    await setHoldingText(t.ctx.db, x.org.id, x.agent.id, 'Thanks for writing! A person will answer shortly.');
    // Named people (this app is the file's own, so the addresses are free): the screenshots are the docs'.
    const person = (email: string, role: 'owner' | 'member') =>
      createUser(t.ctx.db, t.ctx.clock, { orgId: x.org.id, email, role, password: PASSWORD, actor: 'cli' }, 12);
    const ana = await person('ana@acme.example', 'member');
    const ben = await person('ben@acme.example', 'owner');
    const anaContext = await browser.newContext(DESKTOP);
    const benContext = await browser.newContext(PHONE);
    anaContext.setDefaultTimeout(15_000);
    benContext.setDefaultTimeout(15_000);
    try {
      const anaPage = await signIn(anaContext, base, ana.email);
      const benPage = await signIn(benContext, base, ben.email);
      await anaPage.goto(`${base}/dashboard/inbox`);
      await benPage.goto(`${base}/dashboard/inbox?view=open`);
      await expect.poll(() => anaPage.getByText('No conversation waits for people').count()).toBe(1);

      // A customer writes; the agent has no hook, so people get it: on both open lists within 2 s.
      const maria = randomPhone();
      const wrote = Date.now();
      const first = await call(t, {
        method: 'POST',
        url: '/api/sandbox/inbound',
        headers: x.agentKey.auth,
        payload: { from: maria, text: 'Hi, my parcel never arrived', name: 'Maria Silva' },
      });
      expect(first.statusCode, first.body).toBe(200);
      const anaRow = anaPage.locator('ul.inbox-list > li', { hasText: maria });
      await anaRow.waitFor({ timeout: LIVE_MS });
      await benPage.locator('ul.inbox-list > li', { hasText: maria }).waitFor({ timeout: LIVE_MS });
      expect(Date.now() - wrote).toBeLessThan(LIVE_MS + 500);
      // The navigation counts it.
      await expect.poll(() => anaPage.locator('#waiting-side .count').textContent()).toBe('1');
      await expect.poll(() => anaRow.getByText('Waiting').count()).toBe(1);
      await check(anaPage, 'inbox-list-1280');
      await check(benPage, 'inbox-list-390');

      // Ana opens it; Ben too, on his phone.
      await anaRow.getByRole('link').click();
      await anaPage.getByRole('heading', { level: 1 }).waitFor();
      const conversationPath = new URL(anaPage.url()).pathname;
      await benPage.goto(`${base}${conversationPath}`);
      await anaPage.getByText('Hi, my parcel never arrived').waitFor();
      // Parley's holding text went out once, and shows as Parley's.
      await anaPage.locator('li.outbound', { hasText: 'A person will answer shortly' }).getByText('Parley').waitFor();
      expect(
        (await sentBodies(x.agentKey.auth)).filter((b) => b.to === maria && b.text?.body?.includes('answer shortly')),
      ).toHaveLength(1);

      // Ana assigns it to herself; Ben's page shows it without a reload.
      await anaPage.getByRole('button', { name: 'Assign to me' }).click();
      await anaPage.getByText(`${ana.email} (you)`).waitFor();
      await benPage.locator('#inbox-panel p strong', { hasText: ana.email }).waitFor({ timeout: LIVE_MS });

      // The customer writes again: on Ben's open page within 2 s.
      const again = Date.now();
      expect((await sandboxInbound(t, x.agentKey.auth, maria, 'Order A-1042, please help')).statusCode).toBe(200);
      await benPage.getByText('Order A-1042, please help').waitFor({ timeout: LIVE_MS });
      expect(Date.now() - again).toBeLessThan(LIVE_MS + 500);

      // A photo: inline on Ben's open page once Parley has downloaded it.
      const photo = await call(t, {
        method: 'POST',
        url: '/api/sandbox/inbound',
        headers: x.agentKey.auth,
        payload: {
          from: maria,
          image: { data: pngOf(320, 200, [214, 92, 46]).toString('base64'), mimeType: 'image/png' },
          text: 'This is the box',
        },
      });
      expect(photo.statusCode, photo.body).toBe(200);
      const img = benPage.locator('li.inbound figure.thread-media img');
      await img.waitFor({ timeout: LIVE_MS + 2_000 });
      await expect.poll(() => img.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)).toBe(320);

      // Ana replies with Enter (Shift+Enter is a new line); the text reaches the provider.
      const reply = anaPage.getByLabel('Reply');
      await reply.fill('Sorry about that!');
      await reply.press('Shift+Enter');
      await reply.pressSequentially('Let me check order A-1042.');
      await reply.press('Enter');
      await expect.poll(() => reply.inputValue()).toBe('');
      await expect
        .poll(async () =>
          (await sentBodies(x.agentKey.auth)).some(
            (b) => b.to === maria && b.text?.body === 'Sorry about that!\nLet me check order A-1042.',
          ),
        )
        .toBe(true);
      await benPage
        .locator('li.outbound', { hasText: 'Let me check order A-1042.' })
        .getByText(ana.email)
        .waitFor({ timeout: LIVE_MS });
      // Delivery ticks come with the provider's statuses.
      await benPage.locator('li.outbound', { hasText: 'Let me check order A-1042.' }).getByText('Read').waitFor();
      await check(anaPage, 'inbox-conversation-1280');
      await check(benPage, 'inbox-conversation-390');

      // A note: for the team, on both pages, never sent.
      await benPage.getByLabel('Note', { exact: true }).fill('Carrier lost it: refund approved');
      await benPage.getByRole('button', { name: 'Add note' }).click();
      await anaPage.locator('li.note', { hasText: 'Carrier lost it: refund approved' }).waitFor({ timeout: LIVE_MS });
      expect((await sentBodies(x.agentKey.auth)).some((b) => JSON.stringify(b).includes('refund approved'))).toBe(
        false,
      );

      // Ben (an owner) assigns it to himself from the list of people; Ana sees it.
      await benPage.getByLabel('Assign to').selectOption({ label: ben.email });
      await benPage.getByRole('button', { name: 'Assign', exact: true }).click();
      await anaPage.locator('#inbox-panel p strong', { hasText: ben.email }).waitFor({ timeout: LIVE_MS });
      // Ana, a member, has no such list.
      expect(await anaPage.getByLabel('Assign to').count()).toBe(0);

      // Hand back to the bot, then close: both pages follow.
      await anaPage.getByRole('button', { name: 'Hand back to bot' }).click();
      await benPage.locator('#inbox-panel').getByText('With the bot').waitFor({ timeout: LIVE_MS });
      await anaPage.getByRole('button', { name: 'Take over' }).waitFor();
      await benPage.getByRole('button', { name: 'Close conversation' }).click();
      await anaPage.locator('#inbox-panel').getByText('Closed').waitFor({ timeout: LIVE_MS });
      await anaPage.getByText('This conversation is closed.').waitFor();

      // A conversation the bot holds, opened by a trigger: Ana takes it over; the window is closed,
      // so she sends a template.
      const lee = randomPhone();
      const started = await call(t, {
        method: 'POST',
        url: `/api/triggers/${x.agent.id}/order_shipped`,
        headers: x.agentKey.auth,
        payload: { to: lee, parameters: { header: ['Hi Lee'], body: ['Lee', 'B-7'] } },
      });
      expect(started.statusCode, started.body).toBe(200);
      await anaPage.goto(`${base}/dashboard/inbox/${started.json().conversationId}`);
      await anaPage.getByText('The bot answers this conversation').waitFor();
      await anaPage.getByRole('button', { name: 'Take over' }).click();
      await anaPage.getByText('The 24-hour window is closed').waitFor();
      await anaPage.getByLabel('Template', { exact: true }).selectOption({ label: 'order_update (en_US)' });
      await anaPage.getByLabel('Header parameter 1').fill('Hello Lee');
      await anaPage.getByLabel('Body parameter 1').fill('Lee');
      await anaPage.getByLabel('Body parameter 2').fill('B-8');
      await check(anaPage, 'inbox-template-1280');
      await anaPage.getByRole('button', { name: 'Send template' }).click();
      await expect
        .poll(
          async () => (await sentBodies(x.agentKey.auth)).filter((b) => b.to === lee && b.type === 'template').length,
        )
        .toBe(2);
      await anaPage.locator('li.outbound', { hasText: 'Template order_update: Hello Lee, Lee, B-8' }).waitFor();
    } finally {
      await anaContext.close();
      await benContext.close();
    }
  }, 120_000);

  it('a person of another organization sees none of it', async () => {
    const x = await makeSendingTenant(t.ctx);
    const y = await makeSendingTenant(t.ctx);
    const carl = await makeUser(t.ctx, y.org.id, 'owner');
    const phone = randomPhone();
    expect((await sandboxInbound(t, x.agentKey.auth, phone, 'Private matter')).statusCode).toBe(200);
    const list = await call(t, { method: 'GET', url: '/api/conversations?handler=human', headers: x.orgKey.auth });
    const id = list.json().data[0]?.id as string;
    const context = await browser.newContext(DESKTOP);
    try {
      const page = await signIn(context, base, carl.email);
      await page.goto(`${base}/dashboard/inbox?view=open`);
      await page.getByText('No open conversation.').waitFor();
      expect(await page.getByText(phone).count()).toBe(0);
      const res = await page.goto(`${base}/dashboard/inbox/${id}`);
      expect(res?.status()).toBe(404);
      expect(await page.getByText('Private matter').count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  describe.skipIf(!PG_URL)('on several nodes (PostgreSQL)', () => {
    let a: TestApp;
    let b: TestApp;
    beforeAll(async () => {
      a = await createTestApp('postgres', { env: { PARLEY_JOB_POLL_MS: '20' } });
      // Node B works no jobs: whatever it shows, node A applied.
      b = await createTestApp('postgres', { shareWith: a, ownDataDir: true, workJobs: false });
      await b.app.listen({ port: 0, host: '127.0.0.1' });
      await b.ctx.live.ready();
    }, 120_000);
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    it('an inbound message applied by node A shows within 2 s on an inbox page that node B serves', async () => {
      const x = await makeSendingTenant(a.ctx);
      const person = await makeUser(a.ctx, x.org.id, 'member');
      const context = await browser.newContext(DESKTOP);
      try {
        const page = await signIn(context, baseOf(b), person.email);
        await page.goto(`${baseOf(b)}/dashboard/inbox`);
        await page.getByText('No conversation waits for people').waitFor();
        const phone = randomPhone();
        const hook = signedWebhook(
          a.ctx.messaging.appSecret,
          inboundPayload(x.number.phoneNumberId, phone, `wamid.${randomBase62(20)}`, 'Through node A'),
        );
        const sent = Date.now();
        const res = await a.app.inject({
          method: 'POST',
          url: '/webhooks/msgapp',
          headers: hook.headers,
          payload: hook.body,
        });
        expect(res.statusCode).toBe(200);
        const row = page.locator('ul.inbox-list > li', { hasText: phone });
        await row.waitFor({ timeout: LIVE_MS + 1_000 });
        expect(Date.now() - sent).toBeLessThan(LIVE_MS + 1_000);
        await row.getByRole('link').click();
        await page.getByText('Through node A').waitFor();
        // And a second message, on the conversation's page node B serves.
        const next = signedWebhook(
          a.ctx.messaging.appSecret,
          inboundPayload(x.number.phoneNumberId, phone, `wamid.${randomBase62(20)}`, 'Still node A'),
        );
        const again = Date.now();
        await a.app.inject({ method: 'POST', url: '/webhooks/msgapp', headers: next.headers, payload: next.body });
        await page.getByText('Still node A').waitFor({ timeout: LIVE_MS + 1_000 });
        expect(Date.now() - again).toBeLessThan(LIVE_MS + 1_000);
      } finally {
        await context.close();
      }
    }, 60_000);
  });
});
