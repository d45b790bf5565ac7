import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/app.js';
import { expectMatchesContract } from '../helpers/contract.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeAgent, makeKey } from '../helpers/factories.js';
import { createMessagingApp, type MessagingTestApp, makeSendingTenant, randomPhone } from '../helpers/messaging.js';
import { createSandboxTemplate, setSandboxTemplateStatus, syncCatalogue } from '../helpers/policies.js';
import { sandboxLog } from '../helpers/sandbox-log.js';
import { until } from '../helpers/wait.js';

type Tenant = Awaited<ReturnType<typeof makeSendingTenant>>;

describe.each(DIALECTS)('the template catalogue (%s)', (dialect) => {
  let t: MessagingTestApp;
  let tenant: Tenant;
  beforeAll(async () => {
    t = await createMessagingApp(dialect);
    tenant = await makeSendingTenant(t.ctx);
  });
  afterAll(async () => {
    await t.close();
  });

  const list = (headers: Record<string, string>, agent?: string) =>
    t.app.inject({ method: 'GET', url: `/api/templates${agent ? `?agent=${agent}` : ''}`, headers });
  const send = (template: Record<string, unknown>, to = randomPhone()) =>
    t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: tenant.agentKey.auth,
      payload: { channel: 'msgapp', to, type: 'template', template },
    });
  const statusOf = async (name: string) => {
    const res = await list(tenant.agentKey.auth);
    return res.json<{ data: { name: string; status: string }[] }>().data.find((x) => x.name === name)?.status;
  };

  it('before a sync the catalogue is empty and a send falls back to the provider', async () => {
    const res = await list(tenant.orgKey.auth, tenant.agent.id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: [], syncedAt: null });
    const to = randomPhone();
    const refused = await send({ name: 'no_such_template', language: 'en_US' }, to);
    expect(refused.statusCode).toBe(400);
    // The provider's answer: the sandbox saw the request and refused it.
    expect((await sandboxLog(t, tenant.orgKey.auth, { to }))[0]?.error).toBeTruthy();
  });

  it('a sync lists the number’s templates with their category, status and parameters', async () => {
    await syncCatalogue(t, { orgId: tenant.org.id });
    const res = await list(tenant.agentKey.auth);
    expect(res.statusCode).toBe(200);
    expectMatchesContract(t.app, 'GET', '/api/templates', res);
    const body = res.json<{ data: Record<string, unknown>[]; syncedAt: number }>();
    expect(body.syncedAt).toEqual(expect.any(Number));
    const byName = new Map(body.data.map((x) => [x.name, x]));
    expect(byName.get('order_update')).toEqual({
      name: 'order_update',
      language: 'en_US',
      category: 'UTILITY',
      status: 'APPROVED',
      header: { format: 'TEXT', parameters: 1 },
      bodyParameters: 2,
      buttons: [],
      updatedAt: expect.any(Number),
    });
    expect(byName.get('hello_world')).toMatchObject({ category: 'UTILITY', header: null, bodyParameters: 0 });
    expect(byName.get('promo_image')).toMatchObject({
      category: 'MARKETING',
      header: { format: 'IMAGE', parameters: 1 },
      bodyParameters: 1,
    });
    expect(byName.get('spring_sale')).toMatchObject({ category: 'MARKETING', language: 'en_US', bodyParameters: 1 });
  });

  it('an organization key must name the agent; an agent key sees only its own', async () => {
    const missing = await list(tenant.orgKey.auth);
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toEqual({ success: false, error: expect.stringContaining("'agent' is required") });
    expect((await list(tenant.agentKey.auth, tenant.other.id)).statusCode).toBe(403);
    expect((await list(tenant.orgKey.auth, 'agt_nope')).statusCode).toBe(404);
    const noNumber = await makeAgent(t.ctx, tenant.org.id);
    expect((await list(tenant.orgKey.auth, noNumber.id)).statusCode).toBe(400);
    const endUsersOnly = await makeKey(t.ctx, tenant.org.id, { permissions: ['endusers'] });
    expect((await list(endUsersOnly.auth, tenant.agent.id)).statusCode).toBe(403);
  });

  it.each([
    [
      { name: 'nope_template', language: 'en_US' },
      "Template nope_template (en_US) does not exist on this agent's number",
    ],
    [{ name: 'order_update', language: 'pt_BR' }, 'exists in en_US'],
    [
      { name: 'order_update', language: 'en_US', parameters: { header: ['A'], body: ['x'] } },
      'Template order_update (en_US) expects 2 body parameters, got 1.',
    ],
    [
      { name: 'order_update', language: 'en_US', parameters: { body: ['x', 'y'] } },
      'Template order_update (en_US) expects 1 header parameter, got 0.',
    ],
    [{ name: 'hello_world', language: 'en_US', parameters: { header: ['x'] } }, 'has no header'],
  ])('refuses %j before the provider', async (template, sentence) => {
    const to = randomPhone();
    const res = await send(template, to);
    expect(res.statusCode).toBe(400);
    expect(Object.keys(res.json()).sort()).toEqual(['error', 'success']);
    expect(res.json().error).toContain(sentence);
    expect(await sandboxLog(t, tenant.orgKey.auth, { to })).toEqual([]);
  });

  it('a template made, approved and paused: refused, sent, refused', async () => {
    const name = `policy_${randomBytes(4).toString('hex')}`;
    const made = await createSandboxTemplate(t, { name, body: 1 });
    expect(made.status).toBe(200);
    expect(made.body.status).toBe('PENDING');
    await syncCatalogue(t, { orgId: tenant.org.id });
    expect(await statusOf(name)).toBe('PENDING');
    const to = randomPhone();
    const pending = await send({ name, language: 'en_US', parameters: { body: ['A'] } }, to);
    expect(pending.statusCode).toBe(400);
    expect(pending.json().error).toBe(
      `Template ${name} (en_US) is PENDING, not APPROVED, so the provider would refuse it.`,
    );
    expect(await sandboxLog(t, tenant.orgKey.auth, { to })).toEqual([]);

    // The provider's webhook is applied at once: no sync needed.
    expect((await setSandboxTemplateStatus(t, name, 'APPROVED')).status).toBe(200);
    await until(async () => (await statusOf(name)) === 'APPROVED', 'the approval applied');
    // The send path's catalogue (kept in memory, dropped through the key epoch) sees it too.
    const approved = { name, language: 'en_US', parameters: { body: ['A'] } };
    await until(async () => {
      const check = await t.app.inject({
        method: 'POST',
        url: '/api/channels/send/check',
        headers: tenant.agentKey.auth,
        payload: { channel: 'msgapp', to, type: 'template', template: approved },
      });
      return (
        check.json<{ checks: { rule: string; ok: boolean }[] }>().checks.find((c) => c.rule === 'template')?.ok === true
      );
    }, 'the send path sees the approval');
    const sent = await send(approved, to);
    expect(sent.statusCode, sent.body).toBe(200);
    expect(await sandboxLog(t, tenant.orgKey.auth, { to })).toHaveLength(1);

    await setSandboxTemplateStatus(t, name, 'PAUSED');
    await until(async () => (await statusOf(name)) === 'PAUSED', 'the pause applied');
    const paused = await send({ name, language: 'en_US', parameters: { body: ['A'] } }, to);
    expect(paused.statusCode).toBe(400);
    expect(paused.json().error).toContain('is PAUSED, not APPROVED');
    expect(await sandboxLog(t, tenant.orgKey.auth, { to })).toHaveLength(1);
  });

  it('the agent page lists its number’s templates', async () => {
    const owner = await signInAs(t.app, (await makeUser(t.ctx, tenant.org.id, 'member')).email);
    const page = await owner.get(`/dashboard/agents/${tenant.agent.id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<h2 id="templates-heading">Templates</h2>');
    expect(page.body).toMatch(
      /<td><code>spring_sale<\/code><\/td><td>en_US<\/td><td>MARKETING<\/td><td>APPROVED<\/td>/,
    );
    expect(page.body).toContain('<td>TEXT (1)</td><td>2</td>');
  });
});
