import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listConversations } from '../../src/conversations/index.js';
import { seriousViolations } from '../helpers/axe.js';
import { CHROMIUM, HAVE_CHROMIUM, IN_CI, launchChromium } from '../helpers/browser.js';
import { PHONE, SHOTS, shot } from '../helpers/browser-checks.js';
import { makeUser, PASSWORD } from '../helpers/dashboard.js';
import { call } from '../helpers/http.js';
import { pngOf } from '../helpers/media.js';
import { createMessagingApp, type MessagingTestApp, makeSendingTenant, randomPhone } from '../helpers/messaging.js';

/**
 * The conversation view with every kind a user can send, in a real browser at 1280 and 390 px:
 * the photo inline (through the dashboard's own address, by the session), other files as
 * downloads with their size, a location as a link to its coordinates, replies and reactions as
 * what they are. One dialect: the page reads through the same services as the API.
 */

if (!HAVE_CHROMIUM && !IN_CI) process.stderr.write(`thread-media.test.ts skipped: no chromium at ${CHROMIUM}\n`);

describe.skipIf(!HAVE_CHROMIUM && !IN_CI)('the conversation view shows what users send (sqlite)', () => {
  let t: MessagingTestApp;
  let browser: Browser;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await createMessagingApp('sqlite', { env: { PARLEY_JOB_POLL_MS: '20' } });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function signIn(page: Page, email: string) {
    await page.goto(`${t.url}/dashboard/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/dashboard');
  }

  it('shows a photo inline, files as downloads, a location, a button tap, a list choice and a reaction; at 1280 and 390 px', async () => {
    const x = await makeSendingTenant(t.ctx);
    const from = randomPhone();
    const send = async (body: Record<string, unknown>) => {
      const res = await call(t, {
        method: 'POST',
        url: '/api/sandbox/inbound',
        headers: x.orgKey.auth,
        payload: { convId: x.agent.id, from, ...body },
      });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as { messageId: string }).messageId;
    };
    const first = await send({
      image: { data: pngOf(640, 420, [214, 92, 46]).toString('base64'), mimeType: 'image/png' },
      text: 'The parcel arrived like this',
    });
    await send({
      document: {
        data: Buffer.from(`%PDF-1.4\n${'x'.repeat(180_000)}`).toString('base64'),
        mimeType: 'application/pdf',
        filename: 'invoice-1042.pdf',
      },
    });
    await send({ audio: { data: Buffer.from(`OggS${'x'.repeat(20_000)}`).toString('base64'), mimeType: 'audio/ogg' } });
    await send({ location: { latitude: 38.7223, longitude: -9.1393, name: 'Lisbon office' } });
    await send({ buttonReply: { id: 'refund', title: 'Refund' } });
    await send({ listReply: { id: 'slot-9', title: 'Tomorrow 9:00' } });
    await send({ reaction: { messageId: first, emoji: '👍' } });
    await t.ctx.jobs.drained();
    const [conversation] = (await listConversations(t.ctx.db, { orgId: x.org.id, agentId: null }, {})).data;
    const user = await makeUser(t.ctx, x.org.id);

    // Another organization's file is not this person's to see.
    const y = await makeSendingTenant(t.ctx);
    await call(t, {
      method: 'POST',
      url: '/api/sandbox/inbound',
      headers: y.agentKey.auth,
      payload: {
        from: randomPhone(),
        image: { data: pngOf(8, 8, [0, 0, 0]).toString('base64'), mimeType: 'image/png' },
      },
    });
    await t.ctx.jobs.drained();
    const foreign = await t.ctx.db
      .selectFrom('media')
      .select('id')
      .where('org_id', '=', y.org.id)
      .executeTakeFirstOrThrow();

    for (const [name, options] of [
      ['desktop', { viewport: { width: 1280, height: 800 } }],
      ['phone', PHONE],
    ] as const) {
      const context = await browser.newContext(options);
      const page = await context.newPage();
      await signIn(page, user.email);
      await page.goto(`${t.url}/dashboard/conversations/${conversation?.id}`);
      const photo = page.getByRole('img', { name: 'Photo: The parcel arrived like this' });
      await photo.waitFor();
      await expect
        .poll(() => photo.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth))
        .toBe(640);
      await expect(page.getByRole('link', { name: 'invoice-1042.pdf' }).getAttribute('download')).resolves.toBe('');
      await page.getByText(/^17\d KB$/).waitFor();
      await page.getByRole('link', { name: 'Voice note', exact: true }).waitFor();
      const map = page.getByRole('link', { name: 'Location: Lisbon office (38.7223, -9.1393)' });
      expect(await map.getAttribute('href')).toBe(
        'https://www.openstreetmap.org/?mlat=38.7223&mlon=-9.1393#map=16/38.7223/-9.1393',
      );
      await page.getByText('Tapped the button “Refund”').waitFor();
      await page.getByText('Chose “Tomorrow 9:00” from a list').waitFor();
      await page.getByText('Reacted 👍 to a message').waitFor();
      // The file through the session, and nothing of another organization.
      const pdf = await page.request.get(
        `${t.url}${await page.getByRole('link', { name: 'invoice-1042.pdf' }).getAttribute('href')}`,
      );
      expect(pdf.status()).toBe(200);
      expect(pdf.headers()['content-disposition']).toBe(
        'attachment; filename="invoice-1042.pdf"; filename*=UTF-8\'\'invoice-1042.pdf',
      );
      expect((await page.request.get(`${t.url}/dashboard/media/${foreign.id}`)).status()).toBe(404);

      const width = await page.evaluate(
        () =>
          (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
            .scrollWidth,
      );
      expect(width, `the ${name} page fits its screen`).toBeLessThanOrEqual(options.viewport.width);
      await shot(page, `${name}-conversation-media`);
      expect(await seriousViolations(page)).toEqual([]);
      await context.close();
    }
    // Without a session: the sign-in page, never the file.
    const anonymous = await fetch(`${t.url}/dashboard/media/${foreign.id}`, { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
  }, 120_000);
});
