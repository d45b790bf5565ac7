import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { listTriggers } from '../../src/triggers/trigger.service.js';
import { DIALECTS } from '../helpers/app.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';
import { createMessagingApp, type MessagingTestApp, makeSendingTenant, randomPhone } from '../helpers/messaging.js';

describe.each(DIALECTS)('dashboard agents and conversations (%s)', (dialect) => {
  let t: MessagingTestApp;
  beforeAll(async () => {
    t = await createMessagingApp(dialect);
  });
  afterAll(async () => {
    await t.close();
  });

  it('shows agents with number, hook and triggers; managers add, disable and enable triggers; members only look', async () => {
    const { app, ctx } = t;
    const tenant = await makeSendingTenant(ctx);
    await createEndpoint(ctx, {
      orgId: tenant.org.id,
      url: 'https://bot.example.com/parley-hook',
      agentId: tenant.agent.id,
    });
    const owner = await signInAs(app, (await makeUser(ctx, tenant.org.id, 'owner')).email);
    const member = await signInAs(app, (await makeUser(ctx, tenant.org.id, 'member')).email);

    const base = `/dashboard/agents/${tenant.agent.id}/triggers`;
    const bad = await owner.post(base, {
      _csrf: owner.csrf,
      name: 'Shipped',
      template: 'hello_world',
      language: 'english',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('The trigger was not added: the language must be a code of the form xx_XX');
    const added = await owner.post(base, {
      _csrf: owner.csrf,
      name: 'Order shipped',
      template: 'hello_world',
      language: 'en_US',
      id: 'order_shipped',
    });
    expect(added.statusCode).toBe(303);
    const page = await owner.get('/dashboard/agents');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(tenant.agent.name);
    expect(page.body).toContain(tenant.number.phone);
    expect(page.body).toContain('https://bot.example.com/parley-hook');
    expect(page.body).toMatch(/<td>Order shipped<\/td><td>hello_world<\/td><td>en_US<\/td><td>Enabled<\/td>/);

    const fire = () =>
      app.inject({
        method: 'POST',
        url: `/api/triggers/${tenant.agent.id}/order_shipped`,
        headers: tenant.orgKey.auth,
        payload: { to: randomPhone() },
      });
    expect((await fire()).statusCode).toBe(200);

    expect((await member.post(`${base}/order_shipped/disable`, { _csrf: member.csrf })).statusCode).toBe(403);
    const memberPage = await member.get('/dashboard/agents');
    expect(memberPage.body).toContain('Order shipped');
    expect(memberPage.body).not.toContain('/disable');
    expect(memberPage.body).not.toContain('Add a trigger');

    expect((await owner.post(`${base}/order_shipped/disable`, { _csrf: owner.csrf })).statusCode).toBe(303);
    expect((await listTriggers(ctx.db, tenant.org.id, tenant.agent.id))[0]?.enabled).toBe(false);
    expect((await fire()).statusCode).not.toBe(200);
    expect((await owner.post(`${base}/order_shipped/enable`, { _csrf: owner.csrf })).statusCode).toBe(303);
    expect((await fire()).statusCode).toBe(200);
    // No CSRF token, no change.
    expect((await owner.post(`${base}/order_shipped/disable`, {})).statusCode).toBe(403);
  });

  it('lists conversations by agent and status, shows a thread in order, and hides other organizations', async () => {
    const { app, ctx } = t;
    const tenant = await makeSendingTenant(ctx);
    const owner = await signInAs(app, (await makeUser(ctx, tenant.org.id, 'owner')).email);
    await owner.post(`/dashboard/agents/${tenant.agent.id}/triggers`, {
      _csrf: owner.csrf,
      name: 'Welcome',
      template: 'hello_world',
      language: 'en_US',
      id: 'welcome',
    });
    const to = randomPhone();
    const res = await app.inject({
      method: 'POST',
      url: `/api/triggers/${tenant.agent.id}/welcome`,
      headers: tenant.orgKey.auth,
      payload: { to, endUser: { name: 'Grace Hopper' } },
    });
    expect(res.statusCode).toBe(200);
    const { conversationId } = res.json<{ conversationId: string }>();

    const list = await owner.get('/dashboard/conversations');
    expect(list.body).toContain(`/dashboard/conversations/${conversationId}`);
    const open = await owner.get(`/dashboard/conversations?agent=${tenant.agent.id}&status=open`);
    expect(open.body).toContain(conversationId);
    const closed = await owner.get(`/dashboard/conversations?agent=${tenant.agent.id}&status=closed`);
    expect(closed.body).not.toContain(conversationId);
    const otherAgent = await owner.get(`/dashboard/conversations?agent=${tenant.other.id}`);
    expect(otherAgent.body).not.toContain(conversationId);

    const thread = await owner.get(`/dashboard/conversations/${conversationId}`);
    expect(thread.statusCode).toBe(200);
    expect(thread.body).toContain('Template hello_world');
    expect(thread.body).toContain(tenant.agent.name);
    expect(thread.body).toContain('<h1>Conversation with Grace Hopper</h1>');
    // The end user deleted since: the thread still opens, headed by the record's ID.
    const { endUserId } = (
      await app.inject({ method: 'GET', url: `/api/conversations/${conversationId}`, headers: tenant.orgKey.auth })
    ).json<{ endUserId: string }>();
    const deleted = await app.inject({
      method: 'DELETE',
      url: `/api/endusers/${endUserId}`,
      headers: tenant.orgKey.auth,
    });
    expect(deleted.statusCode).toBe(200);
    const orphan = await owner.get(`/dashboard/conversations/${conversationId}`);
    expect(orphan.statusCode).toBe(200);
    expect(orphan.body).toContain(`<h1>Conversation with ${endUserId}</h1>`);

    const stranger = await signInAs(app, (await makeUser(ctx, (await makeOrg(ctx)).id, 'owner')).email);
    expect((await stranger.get(`/dashboard/conversations/${conversationId}`)).statusCode).toBe(404);
    expect((await stranger.get('/dashboard/conversations')).body).not.toContain(conversationId);
    const agents = await stranger.get('/dashboard/agents');
    expect(agents.body).not.toContain(tenant.agent.name);
    expect(
      (await stranger.post(`/dashboard/agents/${tenant.agent.id}/triggers/welcome/disable`, { _csrf: stranger.csrf }))
        .statusCode,
    ).toBe(404);
  });
});
