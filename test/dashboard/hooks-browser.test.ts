import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { CHROMIUM, HAVE_CHROMIUM, IN_CI, launchChromium } from '../helpers/browser.js';
import { PHONE, SHOTS, shot } from '../helpers/browser-checks.js';
import { makeUser, PASSWORD } from '../helpers/dashboard.js';
import { makeAgent, makeOrg } from '../helpers/factories.js';

/** The hook-created dialog on a phone: its secret and its Copy button within the screen. */

if (!HAVE_CHROMIUM && !IN_CI) {
  process.stderr.write(`hooks-browser.test.ts skipped: no chromium at ${CHROMIUM}\n`);
}

describe.skipIf(!HAVE_CHROMIUM && !IN_CI)('an agent’s hook in a browser at 390 px', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await createTestApp('sqlite', { env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: 'false' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('creates a hook and shows its secret with Copy inside a phone’s screen, warning of a loopback address', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const owner = await makeUser(t.ctx, org.id, 'owner');
    const context = await browser.newContext({
      ...PHONE,
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    context.setDefaultTimeout(15_000);
    try {
      const page = await context.newPage();
      await page.goto(`${base}/dashboard/login`);
      await page.getByLabel('Email').fill(owner.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => new URL(page.url()).pathname).not.toBe('/dashboard/login');

      await page.goto(`${base}/dashboard/agents/${agent.id}`);
      await page.getByRole('button', { name: 'Create hook' }).click();
      const create = page.getByRole('dialog', { name: 'Create hook' });
      await create.getByLabel('Address that receives the events').fill('https://127.0.0.1:4000/');
      // The warning comes as the address is typed (on change), before anything is made.
      await create.getByLabel('Address that receives the events').press('Tab');
      await create.getByText('The server will refuse to deliver events to 127.0.0.1').waitFor();
      await shot(page, 'hook-create-390', false);
      // Enter in the address submits, as on a phone's keyboard.
      await create.getByLabel('Address that receives the events').press('Enter');

      const created = page.getByRole('dialog', { name: 'Hook created' });
      await created.waitFor();
      const secret = created.getByLabel(/Signing secret of/);
      expect(await secret.inputValue()).toMatch(/^whsec_/);
      await expect.poll(() => created.getByText('The server will refuse').isVisible()).toBe(true);
      const copy = created.getByRole('button', { name: 'Copy' });
      for (const element of [copy, secret, created.getByText('Close', { exact: true })]) {
        const box = await element.boundingBox();
        expect(box).not.toBeNull();
        const left = Math.round(box?.x ?? -1);
        const right = Math.round((box?.x ?? 0) + (box?.width ?? 0));
        expect(left >= 0 && right <= 390, `left and right edges ${left}, ${right}`).toBe(true);
      }
      await copy.tap();
      await created.getByText('Copied.').waitFor();
      await shot(page, 'hook-created-390', false);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);
});
