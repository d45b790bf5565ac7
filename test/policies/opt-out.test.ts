import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCampaign } from '../../src/campaigns/campaign.service.js';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { DIALECTS } from '../helpers/app.js';
import { postRecipients } from '../helpers/campaigns.js';
import { runCli } from '../helpers/cli.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeKey, makeTrigger } from '../helpers/factories.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  randomPhone,
  sandboxInbound,
} from '../helpers/messaging.js';
import { syncCatalogue } from '../helpers/policies.js';
import { sandboxLog } from '../helpers/sandbox-log.js';
import { until } from '../helpers/wait.js';

type Tenant = Awaited<ReturnType<typeof makeSendingTenant>>;

describe.each(DIALECTS)('opt-out that holds (%s)', (dialect) => {
  let t: MessagingTestApp;
  let tenant: Tenant;
  beforeAll(async () => {
    t = await createMessagingApp(dialect);
    tenant = await makeSendingTenant(t.ctx);
    await syncCatalogue(t, { orgId: tenant.org.id });
    await createEndpoint(t.ctx, { orgId: tenant.org.id, url: 'https://crm.example.com/parley' });
  });
  afterAll(async () => {
    await t.close();
  });

  const send = (to: string, template: string, body: string[] = []) =>
    t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: tenant.agentKey.auth,
      payload: {
        channel: 'msgapp',
        to,
        type: 'template',
        template: { name: template, language: 'en_US', parameters: { body } },
      },
    });
  const consentOf = async (phone: string) => {
    const row = await t.ctx.db
      .selectFrom('end_users')
      .select(['id', 'consent'])
      .where('org_id', '=', tenant.org.id)
      .where('phone', '=', phone)
      .executeTakeFirst();
    return row
      ? { id: row.id, ...(JSON.parse(row.consent) as { msgapp?: { status: string; source: string } }) }
      : undefined;
  };
  const eventsOf = (type: string) =>
    t.ctx.db
      .selectFrom('event_deliveries')
      .select('payload')
      .where('org_id', '=', tenant.org.id)
      .where('event_type', '=', type)
      .execute();
  const write = async (from: string, text: string) => {
    expect((await sandboxInbound(t, tenant.agentKey.auth, from, text)).statusCode).toBe(200);
  };

  it('STOP (trimmed, any case) denies marketing templates; utility and free text still go; START grants again', async () => {
    const from = randomPhone();
    await write(from, '  stop ');
    await until(async () => (await consentOf(from))?.msgapp?.status === 'denied', 'the opt-out');
    expect((await consentOf(from))?.msgapp).toEqual({
      status: 'denied',
      source: 'keyword:STOP',
      updatedAt: expect.any(Number),
    });
    // The message itself was stored and handed on as any other.
    const inbound = await t.ctx.db
      .selectFrom('inbound_messages')
      .select('text')
      .where('from_phone', '=', from)
      .execute();
    expect(inbound.map((m) => m.text)).toEqual(['  stop ']);
    await until(async () => (await eventsOf('enduser.opted_out')).length > 0, 'enduser.opted_out');
    expect((await eventsOf('message.received')).length).toBeGreaterThan(0);

    const refused = await send(from, 'spring_sale', ['20%']);
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toEqual({
      success: false,
      error: `${from} opted out of marketing messages (consent.msgapp is denied, source keyword:STOP); template spring_sale (en_US) is MARKETING, so it is not sent.`,
    });
    expect((await sandboxLog(t, tenant.orgKey.auth, { to: from })).filter((x) => x.type === 'template')).toEqual([]);
    expect((await send(from, 'hello_world')).statusCode).toBe(200);
    const text = await t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: tenant.agentKey.auth,
      payload: { channel: 'msgapp', to: from, type: 'message', message: { text: 'Your order shipped.' } },
    });
    expect(text.statusCode, text.body).toBe(200);

    await write(from, 'Start');
    await until(async () => (await consentOf(from))?.msgapp?.status === 'granted', 'the opt-in');
    expect((await consentOf(from))?.msgapp?.source).toBe('keyword:START');
    await until(async () => (await eventsOf('enduser.opted_in')).length > 0, 'enduser.opted_in');
    expect((await send(from, 'spring_sale', ['20%'])).statusCode).toBe(200);
  });

  it('an opt-out set through the API holds too, and on the trigger endpoint', async () => {
    const to = randomPhone();
    expect((await send(to, 'hello_world')).statusCode).toBe(200);
    const user = await consentOf(to);
    const endUsers = await makeKey(t.ctx, tenant.org.id, { permissions: ['endusers'] });
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/api/endusers/${user?.id}`,
      headers: { ...endUsers.auth, 'content-type': 'application/merge-patch+json' },
      payload: JSON.stringify({ consent: { msgapp: { status: 'denied' } } }),
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const refused = await send(to, 'spring_sale', ['x']);
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toContain('opted out of marketing messages (consent.msgapp is denied, source api)');
    await makeTrigger(t.ctx, tenant.org.id, tenant.agent.id, 'sale', 'spring_sale');
    const trigger = await t.app.inject({
      method: 'POST',
      url: `/api/triggers/${tenant.agent.id}/sale`,
      headers: tenant.orgKey.auth,
      payload: { to, parameters: { body: ['20%'] } },
    });
    expect(trigger.statusCode).toBe(400);
    expect(trigger.json().error).toContain('opted out of marketing messages');
    expect((await sandboxLog(t, tenant.orgKey.auth, { to })).map((x) => x.type)).toEqual(['template']);
    // Nothing of the refused sends was stored, though the recipient's conversation was live (on
    // PostgreSQL the statement that reads the recipient and its consent stores a send's message).
    const stored = await t.ctx.db
      .selectFrom('messages')
      .select('template_name')
      .where('org_id', '=', tenant.org.id)
      .where('to_phone', '=', to)
      .execute();
    expect(stored.map((m) => m.template_name)).toEqual(['hello_world']);
  });

  it('a campaign delivery to who opted out fails with opted_out and never reaches the provider', async () => {
    const out = randomPhone();
    const other = randomPhone();
    await write(out, 'UNSUBSCRIBE');
    await until(async () => (await consentOf(out))?.msgapp?.status === 'denied', 'the opt-out');
    const campaign = await createCampaign(t.ctx.db, t.ctx.clock, {
      orgId: tenant.org.id,
      name: 'Sale',
      agentId: tenant.agent.id,
      template: 'spring_sale',
      language: 'en_US',
      parameters: { body: ['20%'] },
    });
    const key = await makeKey(t.ctx, tenant.org.id, { scope: 'campaign', campaignId: campaign.id });
    // The check says so first, and queues nothing.
    const checked = await t.app.inject({
      method: 'POST',
      url: `/api/campaigns/${campaign.id}/webhook/check`,
      headers: key.auth,
      payload: { recipients: [{ to: out }, { to: other, dedupeKey: 'k1' }, { to: 'nope' }] },
    });
    expect(checked.statusCode, checked.body).toBe(200);
    expect(checked.json()).toEqual({
      success: true,
      accepted: 2,
      duplicates: 0,
      rejected: 1,
      results: [
        { index: 0, status: 'queued', delivery: 'failed', reason: 'opted_out' },
        { index: 1, status: 'queued', delivery: 'sent' },
        {
          index: 2,
          status: 'rejected',
          error: expect.stringContaining('recipients[2].to must be a valid phone number'),
        },
      ],
    });
    const none = await t.app.inject({
      method: 'GET',
      url: `/api/campaigns/${campaign.id}/deliveries`,
      headers: key.auth,
    });
    expect(none.json().data).toEqual([]);
    const accepted = await postRecipients(t, campaign.id, key.auth, [{ to: out }, { to: other }]);
    expect(accepted.statusCode, accepted.body).toBe(202);
    const deliveries = async () =>
      (await t.app.inject({ method: 'GET', url: `/api/campaigns/${campaign.id}/deliveries`, headers: key.auth })).json<{
        data: { to: string; status: string; error: string | null }[];
      }>().data;
    await until(
      async () => (await deliveries()).every((d) => d.status !== 'queued' && d.status !== 'sending'),
      'the deliveries',
    );
    const byPhone = new Map((await deliveries()).map((d) => [d.to, d]));
    expect(byPhone.get(out)).toMatchObject({ status: 'failed', error: 'opted_out' });
    expect(byPhone.get(other)?.status).not.toBe('failed');
    expect((await sandboxLog(t, tenant.orgKey.auth, { to: out })).filter((x) => x.type === 'template')).toEqual([]);
  });

  it('an organization sets its own words and a reply sent at once', async () => {
    const set = await runCli(
      [
        'org',
        'update',
        '--org',
        tenant.org.id,
        '--opt-out-keywords',
        'halt, basta',
        '--opt-in-keywords',
        'go',
        '--opt-out-reply',
        'No more offers. Reply GO to come back.',
        '--json',
      ],
      t.env,
    );
    expect(set.code, set.stderr).toBe(0);
    expect(set.json()).toEqual({
      id: tenant.org.id,
      optOutKeywords: ['HALT', 'BASTA'],
      optInKeywords: ['GO'],
      optOutReply: 'No more offers. Reply GO to come back.',
    });
    const bad = await runCli(['org', 'update', '--org', tenant.org.id, '--opt-in-keywords', 'halt'], t.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('a keyword cannot both opt out and opt in: HALT');
    const from = randomPhone();
    await write(from, 'STOP'); // no longer a keyword of this organization
    await write(from, 'Basta');
    await until(async () => (await consentOf(from))?.msgapp?.source === 'keyword:BASTA', 'the opt-out');
    await until(
      async () => (await sandboxLog(t, tenant.orgKey.auth, { to: from })).some((x) => x.type === 'text'),
      'the reply',
    );
    const reply = (await sandboxLog(t, tenant.orgKey.auth, { to: from })).find((x) => x.type === 'text');
    expect(reply?.payload).toMatchObject({ text: { body: 'No more offers. Reply GO to come back.' } });
  });

  it('the dashboard shows the words and the reply; owners change them, members look', async () => {
    const owner = await signInAs(t.app, (await makeUser(t.ctx, tenant.org.id, 'owner')).email);
    const member = await signInAs(t.app, (await makeUser(t.ctx, tenant.org.id, 'member')).email);
    const page = await owner.get('/dashboard/settings/opt-out');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('name="optOutKeywords" value="HALT, BASTA"');
    const bad = await owner.post('/dashboard/settings/opt-out', {
      _csrf: owner.csrf,
      optOutKeywords: 'stop, two words',
      optInKeywords: 'start',
      optOutReply: '',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('Not saved: opt-out keywords: &quot;TWO WORDS&quot; is not a keyword');
    const saved = await owner.post('/dashboard/settings/opt-out', {
      _csrf: owner.csrf,
      optOutKeywords: 'stop, end',
      optInKeywords: 'start',
      optOutReply: '',
    });
    expect(saved.statusCode).toBe(303);
    expect((await member.get('/dashboard/settings/opt-out')).body).toContain('Opt-out words: STOP, END');
    const refused = await member.post('/dashboard/settings/opt-out', {
      _csrf: member.csrf,
      optOutKeywords: 'x',
      optInKeywords: '',
      optOutReply: '',
    });
    expect(refused.statusCode).toBe(403);
  });
});

// SQLite only: the setting changes which templates the same check refuses, tested on both databases above.
describe('PARLEY_OPT_OUT_STRICT (sqlite)', () => {
  let t: MessagingTestApp;
  beforeAll(async () => {
    t = await createMessagingApp('sqlite', { env: { PARLEY_OPT_OUT_STRICT: 'true' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses every template to who opted out; free text in the window still goes', async () => {
    const tenant = await makeSendingTenant(t.ctx);
    await syncCatalogue(t, { orgId: tenant.org.id });
    const from = randomPhone();
    expect((await sandboxInbound(t, tenant.agentKey.auth, from, 'END')).statusCode).toBe(200);
    const send = (payload: Record<string, unknown>) =>
      t.app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: { channel: 'msgapp', to: from, ...payload },
      });
    const hello = { type: 'template', template: { name: 'hello_world', language: 'en_US' } };
    await until(async () => (await send(hello)).statusCode === 400, 'the opt-out');
    expect((await send(hello)).json().error).toContain('no template is sent to an end user who opted out');
    expect((await send({ type: 'message', message: { text: 'Noted.' } })).statusCode).toBe(200);
  });
});
