import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/audit/audit.service.js';
import { listCampaigns } from '../../src/campaigns/campaign.service.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeAgent, makeOrg } from '../helpers/factories.js';

const HTMX = { 'hx-request': 'true' };

describe.each(DIALECTS)('dashboard: creating, pausing and resuming campaigns (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t.close();
  });

  it('owners and admins on the paid plan create a campaign; refused input is explained in the dialog', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const admin = await signInAs(t.app, (await makeUser(t.ctx, org.id, 'admin')).email);
    const list = await admin.get('/dashboard/campaigns');
    expect(list.body).toContain('hx-get="/dashboard/campaigns/new"');
    const opened = await admin.get('/dashboard/campaigns?create=1');
    expect(opened.body).toMatch(/<dialog aria-labelledby="campaign-create-title" data-modal open>/);
    expect(opened.body).toContain(`<option value="${agent.id}">${agent.name}</option>`);

    const form = {
      _csrf: admin.csrf,
      name: 'Spring sale',
      agent: agent.id,
      template: 'order_update',
      language: 'en_US',
    };
    const bad = await admin.post('/dashboard/campaigns', { ...form, language: 'english' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toMatch(/<dialog aria-labelledby="campaign-create-title" data-modal open>/);
    expect(bad.body).toContain('Language must look like en_US (xx_XX), got &quot;english&quot;.');
    // What was typed stays in the form.
    expect(bad.body).toContain('value="Spring sale"');
    const noName = await admin.post('/dashboard/campaigns', { ...form, name: '  ' }, HTMX);
    expect(noName.statusCode).toBe(200);
    expect(noName.body).toContain('Campaign name must not be empty.');
    const otherAgent = await admin.post('/dashboard/campaigns', { ...form, agent: 'agt_nope' }, HTMX);
    expect(otherAgent.body).toContain('Choose one of your agents.');
    expect(await listCampaigns(t.ctx.db, org.id)).toEqual([]);

    const made = await admin.post('/dashboard/campaigns', { ...form, body: 'Ana\n\n#1042\n', header: 'Spring' }, HTMX);
    expect(made.statusCode).toBe(204);
    const [campaign] = await listCampaigns(t.ctx.db, org.id);
    expect(made.headers['hx-redirect']).toBe(`/dashboard/campaigns/${campaign?.id}`);
    expect(campaign).toMatchObject({
      name: 'Spring sale',
      agentId: agent.id,
      template: 'order_update',
      language: 'en_US',
      status: 'active',
      parameters: { body: ['Ana', '#1042'], header: ['Spring'] },
    });
    const page = await admin.get(`/dashboard/campaigns/${campaign?.id}`);
    expect(page.body).toContain('order_update (en_US)');
    expect((await listAudit(t.ctx.db, org.id, { limit: 5 })).map((a) => a.action)).toContain('campaign.created');
  });

  it('pauses and resumes from the list; members and the free plan create nothing', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const owner = await signInAs(t.app, (await makeUser(t.ctx, org.id, 'owner')).email);
    const form = { _csrf: owner.csrf, name: 'Autumn', agent: agent.id, template: 'hello_world', language: 'en_US' };
    expect((await owner.post('/dashboard/campaigns', form)).statusCode).toBe(303);
    const [campaign] = await listCampaigns(t.ctx.db, org.id);
    const id = campaign?.id ?? '';
    const list = await owner.get('/dashboard/campaigns');
    expect(list.body).toContain(`action="/dashboard/campaigns/${id}/pause"`);
    const paused = await owner.post(`/dashboard/campaigns/${id}/pause`, { _csrf: owner.csrf, back: 'list' });
    expect(paused.statusCode).toBe(303);
    expect(paused.headers.location).toBe('/dashboard/campaigns');
    expect((await listCampaigns(t.ctx.db, org.id))[0]?.status).toBe('paused');
    expect((await owner.get('/dashboard/campaigns')).body).toContain(`action="/dashboard/campaigns/${id}/resume"`);
    const resumed = await owner.post(`/dashboard/campaigns/${id}/resume`, { _csrf: owner.csrf, back: 'list' }, HTMX);
    expect(resumed.headers['hx-redirect']).toBe('/dashboard/campaigns');
    expect((await listCampaigns(t.ctx.db, org.id))[0]?.status).toBe('active');
    // From the campaign's own page, back to it.
    const fromPage = await owner.post(`/dashboard/campaigns/${id}/pause`, { _csrf: owner.csrf });
    expect(fromPage.headers.location).toBe(`/dashboard/campaigns/${id}`);

    const member = await signInAs(t.app, (await makeUser(t.ctx, org.id, 'member')).email);
    const looked = await member.get('/dashboard/campaigns');
    expect(looked.body).not.toContain('Create campaign');
    expect(looked.body).not.toContain('/pause"');
    for (const [url, body] of [
      ['/dashboard/campaigns', { ...form, name: 'Not mine' }],
      [`/dashboard/campaigns/${id}/resume`, {}],
    ] as const) {
      const refused = await member.post(url, { ...body, _csrf: member.csrf });
      expect(refused.statusCode).toBe(403);
      expect(refused.body).toContain('Only owners and admins');
    }

    const free = await makeOrg(t.ctx, 'free');
    const freeAgent = await makeAgent(t.ctx, free.id);
    const freeOwner = await signInAs(t.app, (await makeUser(t.ctx, free.id, 'owner')).email);
    expect((await freeOwner.get('/dashboard/campaigns')).body).toContain('Campaigns come with the paid plan');
    const refused = await freeOwner.post('/dashboard/campaigns', {
      ...form,
      _csrf: freeOwner.csrf,
      agent: freeAgent.id,
    });
    expect(refused.statusCode).toBe(403);
    expect(await listCampaigns(t.ctx.db, free.id)).toEqual([]);
    expect((await listCampaigns(t.ctx.db, org.id)).map((c) => c.name)).toEqual(['Autumn']);
  });
});
