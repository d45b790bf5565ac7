import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndUser } from '../../src/end-users/end-user.service.js';
import { listKeys } from '../../src/keys/key.service.js';
import { DIALECTS } from '../helpers/app.js';
import { makeCampaignTenant, phones, postRecipients } from '../helpers/campaigns.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';
import { createMessagingApp, type MessagingTestApp } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

const HTMX = { 'hx-request': 'true' };

describe.each(DIALECTS)('dashboard campaigns and end users (%s)', (dialect) => {
  let t: MessagingTestApp;
  beforeAll(async () => {
    t = await createMessagingApp(dialect);
  });
  afterAll(async () => {
    await t.close();
  });

  it('lists campaigns and shows a campaign with its counts, deliveries and keys to a member', async () => {
    const { app, ctx } = t;
    const tenant = await makeCampaignTenant(ctx);
    const [to, later] = phones(2);
    expect((await postRecipients(t, tenant.campaign.id, tenant.campaignKey.auth, [{ to }])).statusCode).toBe(202);
    // A later post (on a later millisecond) is listed first: the most recent deliveries come first.
    const first = Date.now();
    await until(() => Date.now() > first + 1, 'the next millisecond');
    expect((await postRecipients(t, tenant.campaign.id, tenant.campaignKey.auth, [{ to: later }])).statusCode).toBe(
      202,
    );
    const member = await signInAs(app, (await makeUser(ctx, tenant.org.id, 'member')).email);

    const list = await member.get('/dashboard/campaigns');
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain('<a href="/dashboard/campaigns" aria-current="page">Campaigns</a>');
    expect(list.body).toContain(`<a href="/dashboard/campaigns/${tenant.campaign.id}">Spring launch</a>`);
    expect(list.body).toContain(`<td>${tenant.agent.name}</td><td>hello_world (en_US)</td><td>Active</td>`);

    const page = await member.get(`/dashboard/campaigns/${tenant.campaign.id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<h1>Spring launch</h1>');
    expect(page.body).toContain(`Agent: ${tenant.agent.name}`);
    expect(page.body).toContain('Template: hello_world (en_US)');
    expect(page.body).toContain(`<td>${to}</td>`);
    expect(page.body.indexOf(`<td>${later}</td>`)).toBeLessThan(page.body.indexOf(`<td>${to}</td>`));
    expect(page.body).toContain(tenant.campaignKey.prefix);
    // A member looks; no buttons that change anything.
    expect(page.body).not.toContain('Create campaign key');
    expect(page.body).not.toContain('>Pause<');
    expect(page.body).not.toContain('aria-label="Revoke');
  });

  it('creates a campaign key on the page (shown once, works), lists it in the panel, and revokes it', async () => {
    const { app, ctx } = t;
    const tenant = await makeCampaignTenant(ctx);
    const admin = await signInAs(app, (await makeUser(ctx, tenant.org.id, 'admin')).email);
    const base = `/dashboard/campaigns/${tenant.campaign.id}`;

    const page = await admin.get(base);
    expect(page.body).toContain('Create campaign key');
    // Without JavaScript the button opens the page with the dialog; with htmx, the dialog alone.
    const noJs = await admin.get(`${base}/keys/new`);
    expect(noJs.statusCode).toBe(303);
    expect(noJs.headers.location).toBe(`${base}?create=1`);
    const withDialog = await admin.get(`${base}?create=1`);
    expect(withDialog.body).toMatch(/<dialog aria-labelledby="campaign-key-title" data-modal open>/);
    const dialog = await admin.get(`${base}/keys/new`, HTMX);
    expect(dialog.body).toContain('<label for="campaign-key-label">Label</label>');
    expect(dialog.body).not.toContain('name="permissions"');

    // No CSRF token, no key; a blank label is explained in the dialog.
    expect((await admin.post(`${base}/keys`, { label: 'Ads' })).statusCode).toBe(403);
    const blank = await admin.post(`${base}/keys`, { _csrf: admin.csrf, label: '  ' }, HTMX);
    expect(blank.statusCode).toBe(200);
    expect(blank.body).toContain('A key needs a label.');

    const created = await admin.post(`${base}/keys`, { _csrf: admin.csrf, label: 'Ads platform' }, HTMX);
    expect(created.statusCode).toBe(200);
    expect(created.body).toContain('It will not be shown again.');
    const key = /id="new-key" readonly value="([^"]+)"/.exec(created.body)?.[1] ?? '';
    expect(key).toMatch(/^prl_us_/);
    expect(created.body).toContain(`href="${base}" role="button">Yes, close</a>`);
    const stored = (await listKeys(ctx.db, tenant.org.id)).find((k) => k.label === 'Ads platform');
    expect(stored).toMatchObject({ scope: 'campaign', campaignId: tenant.campaign.id, permissions: ['campaigns'] });

    const auth = { authorization: `Bearer ${key}` };
    const [to] = phones(1);
    expect((await postRecipients(t, tenant.campaign.id, auth, [{ to }])).statusCode).toBe(202);

    // Only its prefix from now on, here and in the API Keys panel, scoped to the campaign.
    const after = await admin.get(base);
    expect(after.body).not.toContain(key);
    expect(after.body).toContain(stored?.prefix);
    const panel = await admin.get('/dashboard/settings/integrations/api-keys');
    expect(panel.body).not.toContain(key);
    expect(panel.body).toMatch(
      /<td>Ads platform<\/td>\s*<td><code>[^<]+<\/code><\/td>\s*<td>Campaign: Spring launch<\/td>/,
    );
    const audit = await admin.get('/dashboard/audit');
    expect(audit.body).toContain(`Ads platform (${stored?.prefix})`);

    // Revoke: the confirmation names the key; the next request is a 401.
    const confirm = await admin.get(`${base}/keys/${stored?.id}/revoke`, HTMX);
    expect(confirm.body).toContain('Revoke API key Ads platform?');
    expect(confirm.body).toContain(`action="${base}/keys/${stored?.id}/revoke"`);
    const revoked = await admin.post(`${base}/keys/${stored?.id}/revoke`, { _csrf: admin.csrf });
    expect(revoked.statusCode).toBe(303);
    expect(revoked.headers.location).toBe(base);
    expect((await postRecipients(t, tenant.campaign.id, auth, [{ to: phones(1)[0] }])).statusCode).toBe(401);
    // Now in the revoked section (collapsed), with its revocation time; no longer among the active keys.
    const afterRevoke = (await admin.get(base)).body;
    const revokedSection = afterRevoke.slice(afterRevoke.indexOf('<details class="revoked-keys">'));
    expect(revokedSection).toContain('<summary>Revoked keys (1)</summary>');
    expect(revokedSection).toMatch(
      new RegExp(`data-key-id="${stored?.id}">.*<td class="when">\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC</td></tr>`),
    );
    expect(afterRevoke).not.toContain(`aria-label="Revoke Ads platform"`);
    // Another organization's key cannot be revoked through this campaign.
    const outsiderKey = (await makeCampaignTenant(ctx)).campaignKey;
    expect((await admin.post(`${base}/keys/${outsiderKey.id}/revoke`, { _csrf: admin.csrf })).statusCode).toBe(404);
  });

  it('members get 403 on changes; pause and resume change the status and the API answers 409 while paused', async () => {
    const { app, ctx } = t;
    const tenant = await makeCampaignTenant(ctx);
    const ownerUser = await makeUser(ctx, tenant.org.id, 'owner');
    const owner = await signInAs(app, ownerUser.email);
    const member = await signInAs(app, (await makeUser(ctx, tenant.org.id, 'member')).email);
    const base = `/dashboard/campaigns/${tenant.campaign.id}`;

    expect((await member.post(`${base}/keys`, { _csrf: member.csrf, label: 'Mine' })).statusCode).toBe(403);
    expect((await member.post(`${base}/pause`, { _csrf: member.csrf })).statusCode).toBe(403);
    expect((await member.post(`${base}/keys/${tenant.campaignKey.id}/revoke`, { _csrf: member.csrf })).statusCode).toBe(
      403,
    );
    expect((await owner.post(`${base}/pause`, {})).statusCode).toBe(403);

    const paused = await owner.post(`${base}/pause`, { _csrf: owner.csrf });
    expect(paused.statusCode).toBe(303);
    let page = await owner.get(base);
    expect(page.body).toContain('<strong id="campaign-status">Paused</strong>');
    expect(page.body).toContain('>Resume</button>');
    const [to] = phones(1);
    expect((await postRecipients(t, tenant.campaign.id, tenant.campaignKey.auth, [{ to }])).statusCode).toBe(409);

    const resumed = await owner.post(`${base}/resume`, { _csrf: owner.csrf }, HTMX);
    expect(resumed.statusCode).toBe(204);
    expect(resumed.headers['hx-redirect']).toBe(base);
    page = await owner.get(base);
    expect(page.body).toContain('<strong id="campaign-status">Active</strong>');
    expect(page.body).toContain('>Pause</button>');
    expect((await postRecipients(t, tenant.campaign.id, tenant.campaignKey.auth, [{ to }])).statusCode).toBe(202);
    // The audit log names who paused and who resumed (newest first).
    const audit = await owner.get('/dashboard/audit');
    expect(audit.body).toMatch(
      new RegExp(`${ownerUser.email}[\\s\\S]*Resumed campaign[\\s\\S]*${ownerUser.email}[\\s\\S]*Paused campaign`),
    );
  });

  it('removes a campaign after a confirmation: owners and admins only; its key is refused; the audit log names who', async () => {
    const { app, ctx } = t;
    const tenant = await makeCampaignTenant(ctx);
    const adminUser = await makeUser(ctx, tenant.org.id, 'admin');
    const admin = await signInAs(app, adminUser.email);
    const member = await signInAs(app, (await makeUser(ctx, tenant.org.id, 'member')).email);
    const stranger = await signInAs(app, (await makeUser(ctx, (await makeOrg(ctx)).id, 'owner')).email);
    const base = `/dashboard/campaigns/${tenant.campaign.id}`;

    // The confirmation: a dialog through htmx, or the page with it open without JavaScript.
    const page = await admin.get(base);
    expect(page.body).toContain(`href="${base}?remove=1" hx-get="${base}/remove"`);
    expect((await member.get(base)).body).not.toContain('Remove campaign');
    const dialog = await admin.get(`${base}/remove`, HTMX);
    expect(dialog.statusCode).toBe(200);
    expect(dialog.body).toContain('Remove campaign Spring launch?');
    expect(dialog.body).toMatch(/its 0 queued deliveries are never sent/);
    const plain = await admin.get(`${base}/remove`);
    expect(plain.statusCode).toBe(303);
    expect(plain.headers.location).toBe(`${base}?remove=1`);
    expect((await admin.get(`${base}?remove=1`)).body).toContain(
      'aria-labelledby="remove-campaign-title" data-modal open',
    );

    expect((await member.get(`${base}/remove`, HTMX)).statusCode).toBe(403);
    expect((await member.post(`${base}/remove`, { _csrf: member.csrf })).statusCode).toBe(403);
    expect((await admin.post(`${base}/remove`, {})).statusCode).toBe(403);
    expect((await stranger.post(`${base}/remove`, { _csrf: stranger.csrf })).statusCode).toBe(404);
    const [to] = phones(1);
    expect((await postRecipients(t, tenant.campaign.id, tenant.campaignKey.auth, [{ to }])).statusCode).toBe(202);

    const removed = await admin.post(`${base}/remove`, { _csrf: admin.csrf }, HTMX);
    expect(removed.statusCode).toBe(204);
    expect(removed.headers['hx-redirect']).toBe('/dashboard/campaigns?removed=Spring%20launch');
    const list = await admin.get('/dashboard/campaigns?removed=Spring%20launch');
    expect(list.body).toContain('Removed campaign <strong>Spring launch</strong>.');
    expect(list.body).not.toContain(tenant.campaign.id);
    expect((await admin.get(base)).statusCode).toBe(404);
    expect((await postRecipients(t, tenant.campaign.id, tenant.campaignKey.auth, [{ to }])).statusCode).toBe(401);
    const audit = await admin.get('/dashboard/audit');
    expect(audit.statusCode).toBe(200);
    expect(audit.body).toMatch(new RegExp(`${adminUser.email}[\\s\\S]*Removed campaign`));
  });

  it("shows another organization's campaign to nobody", async () => {
    const { app, ctx } = t;
    const tenant = await makeCampaignTenant(ctx);
    const stranger = await signInAs(app, (await makeUser(ctx, (await makeOrg(ctx)).id, 'owner')).email);
    const base = `/dashboard/campaigns/${tenant.campaign.id}`;
    expect((await stranger.get(base)).statusCode).toBe(404);
    expect((await stranger.get(`${base}?create=1`)).statusCode).toBe(404);
    expect((await stranger.get(`${base}/keys/new`, HTMX)).statusCode).toBe(404);
    expect((await stranger.post(`${base}/pause`, { _csrf: stranger.csrf })).statusCode).toBe(404);
    expect((await stranger.post(`${base}/keys`, { _csrf: stranger.csrf, label: 'Theirs' })).statusCode).toBe(404);
    expect(
      (await stranger.post(`${base}/keys/${tenant.campaignKey.id}/revoke`, { _csrf: stranger.csrf })).statusCode,
    ).toBe(404);
    expect((await stranger.get('/dashboard/campaigns')).body).not.toContain(tenant.campaign.id);
    const page = await (await signInAs(app, (await makeUser(ctx, tenant.org.id, 'owner')).email)).get(base);
    expect(page.body).toContain('<strong id="campaign-status">Active</strong>');
  });

  it('lists end users, narrows them by search and pages through them', async () => {
    const { app, ctx } = t;
    const org = await makeOrg(ctx);
    const ada = await createEndUser(ctx.db, ctx.clock, org.id, {
      origin: 'manual',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      phone: '+16502000001',
      tags: ['vip', 'beta'],
    });
    const grace = await createEndUser(ctx.db, ctx.clock, org.id, {
      origin: 'manual',
      name: 'Grace Hopper',
      email: 'grace@example.com',
    });
    for (let i = 0; i < 50; i++) {
      await createEndUser(ctx.db, ctx.clock, org.id, {
        origin: 'imported',
        name: `Filler ${i}`,
        email: `filler${i}@example.com`,
      });
    }
    const member = await signInAs(app, (await makeUser(ctx, org.id, 'member')).email);

    const first = await member.get('/dashboard/end-users');
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain('<a href="/dashboard/end-users" aria-current="page">End users</a>');
    const ids = (body: string) => [...body.matchAll(/data-end-user-id="([^"]+)"/g)].map((m) => m[1]);
    expect(ids(first.body)).toHaveLength(50);
    const next = /<a href="([^"]+)" rel="next">Next<\/a>/.exec(first.body)?.[1]?.replaceAll('&amp;', '&') ?? '';
    expect(next).toMatch(/^\/dashboard\/end-users\?cursor=/);
    const second = await member.get(next);
    expect(ids(second.body)).toHaveLength(2);
    expect(second.body).not.toContain('rel="next"');
    const both = first.body + second.body;
    expect(new Set([...ids(first.body), ...ids(second.body)]).size).toBe(52);
    expect(both).toContain(
      `<tr data-end-user-id="${ada._id}"><td>Ada Lovelace</td><td>ada@example.com</td><td>+16502000001</td><td>vip, beta</td><td>—</td><td>manual</td>`,
    );
    expect(both).toContain(
      `<tr data-end-user-id="${grace._id}"><td>Grace Hopper</td><td>grace@example.com</td><td>—</td>`,
    );

    const search = await member.get('/dashboard/end-users?q=ada');
    expect(search.body).toContain(ada._id);
    expect(search.body).not.toContain(grace._id);
    expect(search.body).not.toContain('Filler');
    expect(search.body).toContain('value="ada"');
    const byPhone = await member.get('/dashboard/end-users?q=1650200');
    expect(byPhone.body).toContain(ada._id);
    expect(byPhone.body).not.toContain(grace._id);
    expect((await member.get('/dashboard/end-users?q=nobody-here')).body).toContain('No end users match.');
    expect((await member.get('/dashboard/end-users?cursor=nonsense')).statusCode).toBe(400);

    const stranger = await signInAs(app, (await makeUser(ctx, (await makeOrg(ctx)).id, 'owner')).email);
    const theirs = await stranger.get('/dashboard/end-users?q=ada');
    expect(theirs.body).not.toContain(ada._id);
  });
});
