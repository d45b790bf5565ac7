import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndUsers } from '../../src/end-users/end-user.service.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';

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
});
