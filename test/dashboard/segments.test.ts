import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndUsers } from '../../src/end-users/end-user.service.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeCampaignTenant, phones } from '../helpers/campaigns.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';
import { until } from '../helpers/wait.js';

const HTMX = { 'hx-request': 'true' };

describe.each(DIALECTS)('dashboard segments (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t.close();
  });

  it('the builder counts as the fields change, saves a segment and shows its members; a member only looks', async () => {
    const { ctx, app } = t;
    const org = await makeOrg(ctx);
    await createEndUsers(ctx.db, ctx.clock, org.id, {
      origin: 'manual',
      endUsers: [
        { name: 'Ana', tags: ['vip'], attributes: { plan: 'pro' } },
        { name: 'Bo', tags: ['vip'], attributes: { plan: 'free' } },
        { name: 'Cy', tags: ['new'], attributes: { plan: 'pro' } },
      ],
    });
    const owner = await signInAs(app, (await makeUser(ctx, org.id, 'owner')).email);
    const page = await owner.get('/dashboard/segments');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<a href="/dashboard/segments" aria-current="page">Segments</a>');
    expect(page.body).toContain('data-segment-count="3"');

    const count = async (query: string) => (await owner.get(`/dashboard/segments/count?${query}`, HTMX)).body;
    expect(await count('tagsAny=vip')).toContain('data-segment-count="2"');
    expect(await count('tagsAny=vip&attributes=plan%3Apro')).toContain('data-segment-count="1"');
    expect(await count('attributes=plan')).toContain('Write each attribute as key:value');
    expect(await count('lastSeenAfter=tomorrow')).toContain('must be a date');

    const refused = await owner.post('/dashboard/segments', { _csrf: owner.csrf, name: ' ', tagsAny: 'vip' });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('must not be blank');
    const saved = await owner.post('/dashboard/segments', {
      _csrf: owner.csrf,
      name: 'Pro VIPs',
      tagsAny: 'vip',
      attributes: 'plan:pro',
    });
    expect(saved.statusCode).toBe(303);
    const shown = await owner.get(String(saved.headers.location));
    expect(shown.body).toContain('<h1>Pro VIPs</h1>');
    expect(shown.body).toContain('Filter: tagged any of vip; plan is pro.');
    expect(shown.body).toContain('<td>Ana</td>');
    expect(shown.body).not.toContain('<td>Bo</td>');

    const member = await signInAs(app, (await makeUser(ctx, org.id, 'member')).email);
    const look = await member.get('/dashboard/segments');
    expect(look.body).toContain('Pro VIPs');
    expect(look.body).not.toContain('Save segment');
    expect((await member.post('/dashboard/segments', { _csrf: member.csrf, name: 'x' })).statusCode).toBe(403);
  });

  it('a campaign page sends to a segment now or at a time, shows it run, and cancels a scheduled one', async () => {
    const { ctx, app } = t;
    const c = await makeCampaignTenant(ctx);
    await createEndUsers(ctx.db, ctx.clock, c.org.id, {
      origin: 'manual',
      endUsers: phones(3).map((phone) => ({ phone, tags: ['send-me'] })),
    });
    const owner = await signInAs(app, (await makeUser(ctx, c.org.id, 'owner')).email);
    await owner.post('/dashboard/segments', { _csrf: owner.csrf, name: 'Send me', tagsAny: 'send-me' });
    const page = `/dashboard/campaigns/${c.campaign.id}`;
    const before = await owner.get(page);
    expect(before.body).toContain('Send to a segment');
    const segmentId = /<option value="(seg_[0-9A-Za-z]{22})"/.exec(before.body)?.[1] ?? '';
    expect(before.body).toContain('Send me (3 when last counted)');

    const past = await owner.post(`${page}/sends`, {
      _csrf: owner.csrf,
      segment: segmentId,
      when: 'later',
      at: '2001-01-01T10:00',
    });
    expect(past.statusCode).toBe(400);
    expect(past.body).toContain('That time has passed');
    const now = await owner.post(`${page}/sends`, { _csrf: owner.csrf, segment: segmentId, when: 'now' });
    expect(now.statusCode).toBe(303);
    await until(async () => (await owner.get(page)).body.includes('>Done<'), 'the send shown done');
    const done = (await owner.get(page)).body;
    expect(done).toMatch(/<td class="send-status">Done<\/td><td>3<\/td><td>3<\/td><td>0<\/td><td>0<\/td>/);

    const later = new Date(Date.now() + 86_400_000).toISOString().slice(0, 16);
    expect(
      (await owner.post(`${page}/sends`, { _csrf: owner.csrf, segment: segmentId, when: 'later', at: later }))
        .statusCode,
    ).toBe(303);
    const scheduled = (await owner.get(page)).body;
    expect(scheduled).toContain('>Scheduled<');
    expect(scheduled).toContain('hx-trigger="every 2s"');
    const sendId =
      /data-send-id="(snd_[0-9A-Za-z]{22})"><td>Send me<\/td><td class="when">[^<]+<\/td><td class="send-status">Scheduled/.exec(
        scheduled,
      )?.[1];
    expect(sendId).toBeDefined();
    const fragment = await owner.get(`${page}/sends`, HTMX);
    expect(fragment.body).toContain('id="campaign-sends"');
    expect((await owner.post(`${page}/sends/${sendId}/cancel`, { _csrf: owner.csrf })).statusCode).toBe(303);
    expect((await owner.get(page)).body).toContain('>Canceled<');
  });
});
