import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/audit/audit.service.js';
import type { AppContext } from '../../src/context.js';
import { endpointAddressWarning } from '../../src/events/address-warning.service.js';
import { listDeliveries, listEndpoints } from '../../src/events/endpoint.service.js';
import { emitEvent, eventId } from '../../src/events/event.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeUser, type SignedIn, signInAs } from '../helpers/dashboard.js';
import { makeAgent, makeOrg } from '../helpers/factories.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/wait.js';

const FAST = {
  PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true',
  PARLEY_EVENT_RETRY_DELAYS_MS: '50,50',
  PARLEY_JOB_POLL_MS: '20',
};
const HTMX = { 'hx-request': 'true' };

function emitStatus(ctx: AppContext, orgId: string, agentId: string) {
  return emitEvent(
    { db: ctx.db, jobs: ctx.jobs, clock: ctx.clock },
    { id: eventId('message.status', randomBase62(9)), type: 'message.status', orgId, agentId, data: {}, at: 0 },
  );
}

const secretIn = (body: string) => /id="new-secret" readonly value="(whsec_[^"]+)"/.exec(body)?.[1];

describe.each(DIALECTS)('dashboard: an agent’s hook (%s)', (dialect) => {
  let t: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
    t = await createTestApp(dialect, { env: FAST });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  async function tenant() {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const owner = await signInAs(t.app, (await makeUser(t.ctx, org.id, 'owner')).email);
    return { org, agent, owner, page: `/dashboard/agents/${agent.id}` };
  }
  const create = (who: SignedIn, agentId: string, form: Record<string, string | string[]>, headers = {}) =>
    who.post(`/dashboard/agents/${agentId}/hooks`, { _csrf: who.csrf, ...form }, headers);

  it('creates a hook with its secret shown once; refuses bad input in the dialog; members only look', async () => {
    const { org, agent, owner, page } = await tenant();
    const agentPage = await owner.get(page);
    expect(agentPage.statusCode).toBe(200);
    expect(agentPage.body).toContain('No hook yet');
    expect(agentPage.body).toContain(`hx-get="/dashboard/agents/${agent.id}/hooks/new"`);
    // Without JavaScript the link opens the page with the dialog open.
    const opened = await owner.get(`${page}?hook=new`);
    expect(opened.body).toMatch(/<dialog aria-labelledby="hook-create-title" data-modal open>/);

    const bad = await create(owner, agent.id, { url: 'not a url' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toMatch(/<dialog aria-labelledby="hook-create-title" data-modal open>/);
    expect(bad.body).toContain('&#39;not a url&#39; is not a URL; give an https:// address.');
    const badHtmx = await create(owner, agent.id, { url: 'ftp://bot.example.com/x' }, HTMX);
    expect(badHtmx.statusCode).toBe(200);
    expect(badHtmx.body).toContain('An endpoint URL must be http:// or https://');
    expect(badHtmx.body).not.toContain('<html');
    const badEvent = await create(owner, agent.id, { url: 'https://bot.example.com/x', events: 'message.nope' });
    expect(badEvent.statusCode).toBe(400);
    expect(badEvent.body).toContain('Unknown event type');
    expect(await listEndpoints(t.ctx.db, org.id)).toEqual([]);

    const made = await create(owner, agent.id, { url: `${receiver.url}/made`, events: ['message.received'] }, HTMX);
    expect(made.statusCode).toBe(200);
    const secret = secretIn(made.body);
    expect(secret).toMatch(/^whsec_/);
    expect(made.body).toContain('data-copy="#new-secret"');
    expect(made.body).toContain('It will not be shown again.');
    const [endpoint] = await listEndpoints(t.ctx.db, org.id);
    expect(endpoint).toMatchObject({ agentId: agent.id, url: `${receiver.url}/made`, events: ['message.received'] });
    // Only its seal is stored: the row holds neither the secret nor its body.
    const stored = await t.ctx.db
      .selectFrom('event_endpoints')
      .select('secret')
      .where('id', '=', endpoint?.id ?? '')
      .executeTakeFirstOrThrow();
    expect(stored.secret).not.toContain(secret?.slice(6) ?? 'whsec_');
    expect(t.ctx.messaging.secrets.open(stored.secret)).toBe(secret);
    // Never shown again: not on the agent's page nor on the Agents list.
    for (const url of [page, '/dashboard/agents']) {
      const again = await owner.get(url);
      expect(again.body).toContain(`${receiver.url}/made`);
      expect(again.body).not.toContain(secret);
    }
    const audit = await listAudit(t.ctx.db, org.id, { limit: 10 });
    expect(audit.map((a) => a.action)).toContain('endpoint.created');

    const member = await signInAs(t.app, (await makeUser(t.ctx, org.id, 'member')).email);
    const looked = await member.get(page);
    expect(looked.statusCode).toBe(200);
    expect(looked.body).toContain(`${receiver.url}/made`);
    expect(looked.body).not.toContain('Create hook</a>');
    expect(looked.body).not.toContain('Disable hook');
    const id = endpoint?.id ?? '';
    for (const url of [`/dashboard/agents/${agent.id}/hooks`, `/dashboard/agents/${agent.id}/hooks/${id}/disable`]) {
      const refused = await member.post(url, { _csrf: member.csrf, url: 'https://x.example.com' });
      expect(refused.statusCode).toBe(403);
      expect(refused.body).toContain('Only owners and admins');
    }
    expect((await member.get(`/dashboard/agents/${agent.id}/hooks/new`, HTMX)).statusCode).toBe(403);
    // No CSRF token, no change; another organization's person finds no such agent.
    expect((await owner.post(`/dashboard/agents/${agent.id}/hooks/${id}/disable`, {})).statusCode).toBe(403);
    const stranger = (await tenant()).owner;
    expect((await stranger.get(page)).statusCode).toBe(404);
    expect(
      (await stranger.post(`/dashboard/agents/${agent.id}/hooks/${id}/delete`, { _csrf: stranger.csrf })).statusCode,
    ).toBe(404);
    expect(await listEndpoints(t.ctx.db, org.id)).toHaveLength(1);
  });

  it('shows a hook failing with 401 as failing, resends a delivery to the receiver, disables, enables and deletes', async () => {
    const { org, agent, owner, page } = await tenant();
    receiver.script('/bot', [401]);
    const made = await create(owner, agent.id, { url: `${receiver.url}/bot` });
    const secret = secretIn(made.body) ?? '';
    const [endpoint] = await listEndpoints(t.ctx.db, org.id);
    const id = endpoint?.id ?? '';
    const [deliveryId] = await emitStatus(t.ctx, org.id, agent.id);
    // Three attempts (two retries), then dead.
    await until(
      async () => (await listDeliveries(t.ctx.db, org.id, id))[0]?.status === 'failed',
      'the delivery to fail for good',
    );
    const first = receiver.received.filter((r) => r.path === '/bot');
    expect(first).toHaveLength(3);
    // The secret shown is the one that signs.
    const sample = first[0];
    expect(() =>
      new Webhook(secret).verify(sample?.body ?? '', sample?.headers as Record<string, string>),
    ).not.toThrow();

    const list = await owner.get('/dashboard/agents');
    expect(list.body).toContain(
      `<strong class="hook-state hook-failing">Failing</strong>. Last delivery: Dead: HTTP 401`,
    );
    expect(list.body).toContain('Failures in the last hour: 1.');
    const agentPage = await owner.get(page);
    expect(agentPage.body).toMatch(
      new RegExp(
        `data-delivery-id="${deliveryId}">.*<td>Dead</td><td>HTTP 401</td><td>3</td><td>the endpoint answered 401</td>`,
      ),
    );

    receiver.script('/bot', [200]);
    const resend = await owner.post(`${page}/hooks/${id}/deliveries/${deliveryId}/resend`, { _csrf: owner.csrf });
    expect(resend.statusCode).toBe(303);
    expect(resend.headers.location).toBe(page);
    await until(
      async () => (await listDeliveries(t.ctx.db, org.id, id))[0]?.status === 'delivered',
      'the resent delivery to arrive',
    );
    const all = receiver.received.filter((r) => r.path === '/bot');
    expect(all).toHaveLength(4);
    // The same event ID, from its first attempt.
    expect(all[3]?.headers['webhook-id']).toBe(first[0]?.headers['webhook-id']);
    const healed = await owner.get('/dashboard/agents');
    expect(healed.body).toContain(
      '<strong class="hook-state hook-healthy">Working</strong>. Last delivery: Delivered: HTTP 200',
    );

    const disabled = await owner.post(`${page}/hooks/${id}/disable`, { _csrf: owner.csrf }, HTMX);
    expect(disabled.statusCode).toBe(204);
    expect(disabled.headers['hx-redirect']).toBe(page);
    expect((await owner.get(page)).body).toContain(`hook-disabled">Disabled: disabled by `);
    expect((await listEndpoints(t.ctx.db, org.id))[0]?.disabledAt).not.toBeNull();
    expect((await owner.post(`${page}/hooks/${id}/enable`, { _csrf: owner.csrf })).statusCode).toBe(303);
    expect((await listEndpoints(t.ctx.db, org.id))[0]?.disabledAt).toBeNull();

    const confirm = await owner.get(`${page}?delete=${id}`);
    expect(confirm.body).toContain('Delete this hook?');
    expect(confirm.body).toContain('<button type="submit" class="danger">Delete hook</button>');
    expect((await owner.post(`${page}/hooks/${id}/delete`, { _csrf: owner.csrf })).statusCode).toBe(303);
    expect(await listEndpoints(t.ctx.db, org.id)).toEqual([]);
    const actions = (await listAudit(t.ctx.db, org.id, { limit: 20 })).map((a) => a.action);
    for (const action of [
      'endpoint.created',
      'endpoint.delivery_resent',
      'endpoint.disabled',
      'endpoint.enabled',
      'endpoint.deleted',
    ]) {
      expect(actions).toContain(action);
    }
    const auditPage = await owner.get('/dashboard/audit');
    expect(auditPage.body).toContain('Resent a delivery');
  });
});

describe('dashboard: a hook the server will refuse (sqlite: no SQL of its own)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('sqlite');
  });
  afterAll(async () => {
    await t.close();
  });

  it('warns at once, in the dialog, that a loopback or private address will be refused', async () => {
    const org = await makeOrg(t.ctx);
    const agent = await makeAgent(t.ctx, org.id);
    const owner = await signInAs(t.app, (await makeUser(t.ctx, org.id, 'owner')).email);
    const check = await owner.post(
      `/dashboard/agents/${agent.id}/hooks/check`,
      { _csrf: owner.csrf, url: 'http://127.0.0.1:8787/hook' },
      HTMX,
    );
    expect(check.statusCode).toBe(200);
    expect(check.body).toContain('The server will refuse to deliver events to 127.0.0.1');
    expect(check.body).toContain('PARLEY_WEBHOOK_ALLOW_PRIVATE=true');
    const made = await owner.post(
      `/dashboard/agents/${agent.id}/hooks`,
      { _csrf: owner.csrf, url: 'https://localhost:8787/hook' },
      HTMX,
    );
    expect(made.body).toContain('Hook created');
    expect(made.body).toContain('The server will refuse to deliver events to localhost');
    const fine = await owner.post(
      `/dashboard/agents/${agent.id}/hooks/check`,
      { _csrf: owner.csrf, url: 'https://203.0.114.5/x' },
      HTMX,
    );
    expect(fine.body).not.toContain('refuse');
    expect(
      await endpointAddressWarning('http://10.0.0.1/x', { ...t.ctx.config.events, allowPrivate: true }),
    ).toBeUndefined();
    expect(await endpointAddressWarning('http://[::1]:80/x', t.ctx.config.events)).toContain('::1');
  });
});
