import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCampaign } from '../../src/campaigns/campaign.service.js';
import { createEndUser } from '../../src/end-users/end-user.service.js';
import { assignNumber } from '../../src/numbers/number.service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { CHROMIUM, HAVE_CHROMIUM, IN_CI, launchChromium } from '../helpers/browser.js';
import { check, DESKTOP, KEYS, SHOTS, signIn as signInAt } from '../helpers/browser-checks.js';
import { makeUser } from '../helpers/dashboard.js';
import { makeAgent, makeKey, makeOrg } from '../helpers/factories.js';
import { makeNumber } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

/**
 * The dashboard in a real browser: Debian's chromium driven by playwright-core. In CI (CI=true)
 * a missing chromium fails the run; elsewhere the file is skipped with a message. Every page at
 * both sizes: browser-pages.test.ts (a file of its own, so that another fork runs it meanwhile).
 */

if (!HAVE_CHROMIUM && !IN_CI) {
  process.stderr.write(
    `dashboard-browser.test.ts skipped: no chromium at ${CHROMIUM} (apt-get install -y chromium, or set PARLEY_CHROMIUM)\n`,
  );
}

describe.skipIf(!HAVE_CHROMIUM && !IN_CI)('dashboard in a browser', () => {
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

  const signIn = (page: Page, email: string) => signInAt(base, page, email);

  /** Signs out through the account menu. */
  async function signOut(page: Page) {
    await page.locator('details.account > summary').click();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You have signed out.').waitFor();
  }

  const callApi = (key: string) =>
    fetch(`${base}/api/endusers`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);

  it('signs in, upgrades, creates, uses and revokes keys, and signs out; another organization sees none of it', async () => {
    const { ctx } = t;
    const orgA = await makeOrg(ctx, 'free');
    const agent = await makeAgent(ctx, orgA.id);
    const owner = await makeUser(ctx, orgA.id, 'owner');
    const orgB = await makeOrg(ctx, 'paid');
    const outsider = await makeUser(ctx, orgB.id, 'owner');

    const context = await browser.newContext(DESKTOP);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('console', (msg) => {
      // The sign-in page answered 401 to the wrong password on purpose.
      if (msg.type() === 'error' && !/status of 401/.test(msg.text())) errors.push(msg.text());
    });

    await page.goto(`${base}/dashboard/login`);
    await check(page, '01-login');
    // A wrong password: one answer, on the sign-in page.
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Wrong email or password.' }).waitFor();
    await signIn(page, owner.email);
    // A new organization's home says what to do next.
    await page.getByRole('heading', { name: 'Next steps', level: 2 }).waitFor();
    await check(page, '01b-home-next-steps');

    // Through the navigation: Settings, Integrations, API Keys.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    await check(page, '02-settings');
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('heading', { name: 'Integrations', level: 1 }).waitFor();
    await check(page, '03-integrations');
    await page.getByRole('link', { name: 'API Keys' }).click();
    await page.getByRole('heading', { name: 'API Keys', level: 1 }).waitFor();

    // Free plan: the upgrade offer instead of the table; the owner upgrades after confirming.
    await page.getByText('API keys come with the paid plan').waitFor({ state: 'visible' });
    await expect.poll(() => page.getByRole('button', { name: 'Create API key' }).count()).toBe(0);
    await check(page, '04-upgrade-offer');
    // The Upgrade link opened as a page of its own (a new tab) shows its dialog; Cancel leaves it.
    await page.goto(`${base}${KEYS}?upgrade=1`);
    await page
      .getByRole('dialog', { name: 'Upgrade to the paid plan?' })
      .getByRole('button', { name: 'Cancel' })
      .click();
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    await page.getByRole('button', { name: 'Upgrade' }).click();
    const upgrade = page.getByRole('dialog', { name: 'Upgrade to the paid plan?' });
    await upgrade.waitFor();
    await check(page, '05-upgrade-dialog');
    await upgrade.getByRole('button', { name: 'Upgrade' }).click();
    await page.getByText('No API keys yet').waitFor();
    await check(page, '06-empty-state');

    // An organization key through the dialog; bad input is explained in it first.
    await page.getByRole('button', { name: 'Create API key' }).click();
    let dialog = page.getByRole('dialog', { name: 'Create API key' });
    await dialog.waitFor();
    await dialog.getByLabel('Agent', { exact: true }).waitFor({ state: 'hidden' });
    await check(page, '07-create-dialog');
    await dialog.getByLabel('Label', { exact: true }).fill('Orders app');
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'A key needs at least one permission' }).waitFor();
    dialog = page.getByRole('dialog', { name: 'Create API key' });
    await check(page, '08-create-dialog-error');
    await dialog.getByRole('checkbox', { name: 'Channels' }).check();
    await dialog.getByRole('checkbox', { name: 'End-users' }).check();
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    let created = page.getByRole('dialog', { name: 'API key created' });
    await created.waitFor();
    await created.getByText('It will not be shown again.').waitFor({ state: 'visible' });
    const orgKey = await created.getByLabel('Key for Orders app').inputValue();
    expect(orgKey).toMatch(/^prl_us_/);
    await created.getByRole('button', { name: 'Copy' }).click();
    await created.getByText('Copied.').waitFor();
    await check(page, '09-key-created');
    // Closing asks first; Escape too.
    await page.keyboard.press('Escape');
    await created.getByText('Have you copied the key?').waitFor({ state: 'visible' });
    await created.getByRole('button', { name: 'Yes, close' }).click();
    const orgRow = page.getByRole('row', { name: /Orders app/ });
    await orgRow.waitFor();
    await expect.poll(() => page.getByText(orgKey).count()).toBe(0);
    await expect.poll(() => orgRow.getByRole('cell').nth(6).textContent()).toBe('Never');

    // The key works, and the panel shows it was used.
    expect(await callApi(orgKey)).toBe(200);
    await until(async () => {
      await page.reload();
      return (
        (await page
          .getByRole('row', { name: /Orders app/ })
          .getByRole('cell')
          .nth(6)
          .textContent()) !== 'Never'
      );
    }, 'Last used to change from Never');
    await expect
      .poll(() =>
        page
          .getByRole('row', { name: /Orders app/ })
          .getByRole('cell')
          .nth(6)
          .textContent(),
      )
      .toMatch(/UTC$/);

    // An agent key: Agent appears, End-users is not offered.
    await page.getByRole('button', { name: 'Create API key' }).click();
    dialog = page.getByRole('dialog', { name: 'Create API key' });
    await dialog.waitFor();
    await dialog.getByLabel('Label', { exact: true }).fill('Support bot');
    await dialog.getByLabel('Scope').selectOption({ label: 'Specific AI agent' });
    await dialog.getByLabel('Agent', { exact: true }).waitFor({ state: 'visible' });
    await dialog.getByRole('checkbox', { name: 'End-users' }).waitFor({ state: 'hidden' });
    await dialog.getByLabel('Agent', { exact: true }).selectOption({ label: agent.name });
    await dialog.getByRole('checkbox', { name: 'Triggers' }).check();
    await check(page, '10-create-agent-key');
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    created = page.getByRole('dialog', { name: 'API key created' });
    await created.waitFor();
    expect(await created.getByLabel('Key for Support bot').inputValue()).toMatch(/^prl_us_/);
    await created.getByText('Close', { exact: true }).click();
    await created.getByRole('button', { name: 'Yes, close' }).click();
    const agentRow = page.getByRole('row', { name: /Support bot/ });
    await agentRow.waitFor();
    await expect.poll(() => agentRow.getByRole('cell').nth(2).textContent()).toBe('Specific AI agent');
    await expect.poll(() => agentRow.getByRole('cell').nth(3).textContent()).toBe(agent.name);
    await expect.poll(() => agentRow.getByRole('cell').nth(4).textContent()).toBe('Triggers');
    await check(page, '11-keys-table');

    // Revoke, confirmed in a dialog naming the key; the very next request is a 401.
    await page.getByRole('button', { name: 'Revoke Orders app' }).click();
    const revoke = page.getByRole('dialog', { name: 'Revoke API key Orders app?' });
    await revoke.waitFor();
    await check(page, '12-revoke-dialog');
    // Cancel and Revoke side by side, as tall as each other, each as wide as its label, Cancel
    // in the secondary colour so that the two are told apart.
    const buttons = ['Cancel', 'Revoke'].map((name) => revoke.getByRole('button', { name, exact: true }));
    const [cancelBox, revokeBox] = await Promise.all(buttons.map((button) => button.boundingBox()));
    expect(cancelBox?.height).toBeGreaterThan(0);
    expect(cancelBox?.height).toBe(revokeBox?.height);
    expect(cancelBox?.y).toBe(revokeBox?.y);
    expect(revokeBox?.width).toBeLessThan(200);
    const [cancelColour, revokeColour] = await Promise.all(
      buttons.map((button) =>
        button.evaluate((element) => {
          // Runs in the page (this file is typed for Node, without the DOM's types).
          const page = globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } };
          return page.getComputedStyle(element).backgroundColor;
        }),
      ),
    );
    expect(cancelColour).not.toBe(revokeColour);
    await revoke.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => revoke.count()).toBe(0);
    expect(await callApi(orgKey)).toBe(200);
    await page.getByRole('button', { name: 'Revoke Orders app' }).click();
    await page
      .getByRole('dialog', { name: 'Revoke API key Orders app?' })
      .getByRole('button', { name: 'Revoke' })
      .click();
    // A revoked key leaves the active list for the collapsed section of revoked keys.
    await page.getByText('Revoked keys (1)').click();
    await page
      .getByRole('table', { name: /^Revoked API keys/ })
      .getByRole('row', { name: /Orders app/ })
      .waitFor();
    expect(await callApi(orgKey)).toBe(401);
    await expect.poll(() => page.getByRole('button', { name: 'Revoke Orders app' }).count()).toBe(0);

    // The audit log names who did what.
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
    for (const what of ['Revoked API key', 'Created API key', 'Changed the plan', 'Added person']) {
      await page.getByRole('cell', { name: what, exact: true }).first().waitFor({ state: 'visible' });
    }
    await check(page, '13-audit-log');

    // Agents and conversations, through the navigation.
    await page.getByRole('link', { name: 'Agents' }).click();
    await page.getByRole('heading', { name: agent.name, level: 2 }).waitFor();
    await page.getByText('Add a trigger to').click();
    await page.getByLabel('Trigger name').fill('Order shipped');
    await page.getByLabel('Template').fill('hello_world');
    await page.getByRole('button', { name: 'Add trigger' }).click();
    await page.getByRole('button', { name: 'Disable Order shipped' }).waitFor();
    await check(page, '15-agents');
    await page.getByRole('button', { name: 'Disable Order shipped' }).click();
    await page.getByRole('button', { name: 'Enable Order shipped' }).waitFor();
    await page.getByRole('link', { name: 'Conversations' }).click();
    await page.getByRole('heading', { name: 'Conversations', level: 1 }).waitFor();
    await page.getByLabel('Status').selectOption({ label: 'Open' });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No conversations match.').waitFor();
    await check(page, '16-conversations');

    await signOut(page);
    await page.goto(`${base}${KEYS}`);
    await expect.poll(() => new URL(page.url()).pathname).toBe('/dashboard/login');
    expect(errors).toEqual([]);
    await context.close();

    // Another organization's owner sees none of it.
    const other = await browser.newContext(DESKTOP);
    const otherPage = await other.newPage();
    await signIn(otherPage, outsider.email);
    await otherPage.goto(`${base}${KEYS}`);
    await otherPage.getByText('No API keys yet').waitFor();
    await expect.poll(() => otherPage.getByText('Orders app').count()).toBe(0);
    await expect.poll(() => otherPage.getByText('Support bot').count()).toBe(0);
    await check(otherPage, '14-other-organization');
    await otherPage.getByRole('link', { name: 'Audit log' }).click();
    await otherPage.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
    await expect.poll(() => otherPage.getByText(owner.email).count()).toBe(0);
    await expect.poll(() => otherPage.getByText('Orders app').count()).toBe(0);
    await other.close();
  }, 180_000);

  it('opens Campaigns through the navigation, pauses and resumes, creates a campaign key once, revokes it; lists end users', async () => {
    const { ctx } = t;
    const org = await makeOrg(ctx, 'paid');
    const agent = await makeAgent(ctx, org.id);
    const campaign = await createCampaign(ctx.db, ctx.clock, {
      orgId: org.id,
      name: 'Autumn sale',
      agentId: agent.id,
      template: 'hello_world',
      language: 'en_US',
    });
    await createEndUser(ctx.db, ctx.clock, org.id, {
      origin: 'manual',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      tags: ['vip'],
    });
    await createEndUser(ctx.db, ctx.clock, org.id, { origin: 'manual', name: 'Grace Hopper' });
    const admin = await makeUser(ctx, org.id, 'admin');
    const campaignApi = (key: string) =>
      fetch(`${base}/api/campaigns/${campaign.id}`, { headers: { authorization: `Bearer ${key}` } }).then(
        (r) => r.status,
      );

    const context = await browser.newContext(DESKTOP);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('console', (msg) => {
      // The missing page at the end answers 404 on purpose.
      if (msg.type() === 'error' && !/status of 404/.test(msg.text())) errors.push(msg.text());
    });
    // Every script, style and font comes from Parley: nothing is asked of another origin.
    const outside: string[] = [];
    page.on('request', (req) => {
      if (!req.url().startsWith(`${base}/`) && !req.url().startsWith('data:')) outside.push(req.url());
    });
    await signIn(page, admin.email);

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Campaigns' }).click();
    await page.getByRole('heading', { name: 'Campaigns', level: 1 }).waitFor();
    await page.getByRole('row', { name: /Autumn sale/ }).waitFor();
    await check(page, '17-campaigns');
    await page.getByRole('link', { name: 'Autumn sale' }).click();
    await page.getByRole('heading', { name: 'Autumn sale', level: 1 }).waitFor();
    await page.getByText('No active keys for this campaign.').waitFor();

    // Pause, then resume.
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    await expect.poll(() => page.locator('#campaign-status').textContent()).toBe('Paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    await expect.poll(() => page.locator('#campaign-status').textContent()).toBe('Active');
    await check(page, '18-campaign');
    // Pause and Remove sit side by side, with a gap between them.
    const pauseBox = await page.getByRole('button', { name: 'Pause' }).boundingBox();
    const removeBox = await page.getByRole('button', { name: 'Remove campaign' }).boundingBox();
    expect(pauseBox && removeBox && removeBox.x - (pauseBox.x + pauseBox.width)).toBeGreaterThanOrEqual(8);
    expect(pauseBox && removeBox && Math.abs(removeBox.y - pauseBox.y)).toBeLessThan(4);

    // A campaign key through the dialog: Label only; shown once.
    await page.getByRole('button', { name: 'Create campaign key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create campaign key' });
    await dialog.waitFor();
    await check(page, '19-campaign-key-dialog');
    await dialog.getByLabel('Label', { exact: true }).fill('Ads platform');
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    const created = page.getByRole('dialog', { name: 'API key created' });
    await created.waitFor();
    await created.getByText('It will not be shown again.').waitFor({ state: 'visible' });
    const key = await created.getByLabel('Key for Ads platform').inputValue();
    expect(key).toMatch(/^prl_us_/);
    await created.getByRole('button', { name: 'Copy' }).click();
    await created.getByText('Copied.').waitFor();
    await check(page, '20-campaign-key-created');
    await page.keyboard.press('Escape');
    await created.getByText('Have you copied the key?').waitFor({ state: 'visible' });
    await created.getByRole('button', { name: 'Yes, close' }).click();
    await page.getByRole('heading', { name: 'Autumn sale', level: 1 }).waitFor();
    const row = page.getByRole('row', { name: /Ads platform/ });
    await row.waitFor();
    await expect.poll(() => page.getByText(key).count()).toBe(0);
    expect(await campaignApi(key)).toBe(200);

    // In the API Keys panel too, scoped to the campaign.
    await page.goto(`${base}${KEYS}`);
    const panelRow = page.getByRole('row', { name: /Ads platform/ });
    await expect.poll(() => panelRow.getByRole('cell').nth(2).textContent()).toBe('Campaign: Autumn sale');

    // Revoke on the campaign page, confirmed; the next request is a 401.
    await page.goto(`${base}/dashboard/campaigns/${campaign.id}`);
    await page.getByRole('button', { name: 'Revoke Ads platform' }).click();
    const revoke = page.getByRole('dialog', { name: 'Revoke API key Ads platform?' });
    await revoke.waitFor();
    await check(page, '21-campaign-key-revoke');
    await revoke.getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('Revoked keys (1)').click();
    await page
      .getByRole('table', { name: /^Revoked keys of/ })
      .getByRole('row', { name: /Ads platform/ })
      .waitFor();
    expect(await campaignApi(key)).toBe(401);

    // Removing the campaign asks first; cancelled here.
    await page.getByRole('button', { name: 'Remove campaign' }).click();
    const remove = page.getByRole('dialog', { name: 'Remove campaign Autumn sale?' });
    await remove.waitFor();
    await check(page, '22-campaign-remove');
    await remove.getByRole('button', { name: 'Cancel' }).click();
    await remove.waitFor({ state: 'hidden' });
    await page.getByRole('heading', { name: 'Autumn sale', level: 1 }).waitFor();

    // End users, with search.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'End users' }).click();
    await page.getByRole('heading', { name: 'End users', level: 1 }).waitFor();
    await page.getByRole('cell', { name: 'Grace Hopper' }).waitFor();
    await check(page, '23-end-users');
    await page.getByLabel('Search by name, email or phone').fill('ada');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('cell', { name: 'ada@example.com' }).waitFor();
    await expect.poll(() => page.getByRole('cell', { name: 'Grace Hopper' }).count()).toBe(0);
    await check(page, '24-end-users-search');

    // A conversation: sent by the agent, answered by the end user, with delivery statuses.
    const number = await makeNumber(ctx, org.id);
    await assignNumber(ctx.db, org.id, agent.id, number.phone);
    const channels = await makeKey(ctx, org.id, { permissions: ['channels'] });
    const json = { ...channels.auth, 'content-type': 'application/json' };
    const to = '+14155550142';
    const sent = await fetch(`${base}/api/channels/send`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        channel: 'msgapp',
        to,
        convId: agent.id,
        type: 'template',
        template: { name: 'hello_world', language: 'en_US' },
      }),
    });
    expect(sent.status).toBe(200);
    const { conversationId } = (await sent.json()) as { conversationId: string };
    const inbound = await fetch(`${base}/api/sandbox/inbound`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ convId: agent.id, from: to, text: 'Where is my order?' }),
    });
    expect(inbound.status).toBe(200);
    const thread = async () => {
      const res = await fetch(`${base}/api/conversations/${conversationId}/messages`, { headers: channels.auth });
      return ((await res.json()) as { data: { direction: string; status?: string }[] }).data;
    };
    await until(async () => {
      const messages = await thread();
      return messages.length === 2 && messages[0]?.status === 'read';
    }, 'the reply and the statuses of the template');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Conversations' }).click();
    await page.getByRole('heading', { name: 'Conversations', level: 1 }).waitFor();
    await page.locator(`a[href="/dashboard/conversations/${conversationId}"]`).click();
    await page.getByRole('heading', { name: /^Conversation with \+\d+$/, level: 1 }).waitFor();
    const items = page.locator('ol.thread > li');
    await expect.poll(() => items.count()).toBe(2);
    expect(await items.nth(0).textContent()).toMatch(/^Agent .*Template hello_world \(read\)$/s);
    expect(await items.nth(1).textContent()).toMatch(/^End user .*Where is my order\?$/s);
    await check(page, '25-conversation-thread');

    // A page that does not exist, and one of another organization, answer the same error page.
    const missing = await page.goto(`${base}/dashboard/conversations/cnv_${'x'.repeat(22)}`);
    expect(missing?.status()).toBe(404);
    await page.getByRole('heading', { name: 'Not found', level: 1 }).waitFor();
    await check(page, '26-not-found');

    expect(outside).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  }, 120_000);
});
