import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCampaign } from '../../src/campaigns/campaign.service.js';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { halfPaceLookup } from '../../src/policies/number-health.service.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { postRecipients } from '../helpers/campaigns.js';
import { runCli } from '../helpers/cli.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeKey } from '../helpers/factories.js';
import { createMessagingApp, type MessagingTestApp, makeSendingTenant, quiet } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

type Tenant = Awaited<ReturnType<typeof makeSendingTenant>>;

describe.each(DIALECTS)('the number’s health (%s)', (dialect) => {
  let t: MessagingTestApp;
  let b: TestApp;
  let tenant: Tenant;
  beforeAll(async () => {
    t = await createMessagingApp(dialect, {
      env: { PARLEY_METRICS: 'true', PARLEY_METRICS_TOKEN: 'scrape-token-1234567890' },
    });
    // A second node on the same database, working no jobs: it sees what the first decided.
    b = quiet(await createTestApp(dialect, { shareWith: t, ownDataDir: dialect === 'postgres', workJobs: false }));
    tenant = await makeSendingTenant(t.ctx);
    await createEndpoint(t.ctx, { orgId: tenant.org.id, url: 'https://crm.example.com/parley' });
  });
  afterAll(async () => {
    await b.close();
    await t.close();
  });
  const quality = (rating: string, limit?: string) =>
    runCli(
      [
        'sandbox',
        'quality',
        '--agent',
        tenant.agent.id,
        '--rating',
        rating,
        ...(limit ? ['--limit', limit] : []),
        '--sandbox-url',
        t.sandbox.url,
      ],
      t.env,
    );
  const listNumbers = async () => {
    const res = await runCli(['number', 'list', '--org', tenant.org.id, '--json'], t.env);
    expect(res.code, res.stderr).toBe(0);
    return res.json<{ id: string; quality: string | null; messagingLimit: string | null }[]>();
  };

  it('a number turning RED pauses its campaigns on every node, with the reason; YELLOW halves their pace', async () => {
    const campaign = await createCampaign(t.ctx.db, t.ctx.clock, {
      orgId: tenant.org.id,
      name: 'Weekly',
      agentId: tenant.agent.id,
      template: 'hello_world',
      language: 'en_US',
    });
    const key = await makeKey(t.ctx, tenant.org.id, { scope: 'campaign', campaignId: campaign.id });
    expect((await listNumbers())[0]).toMatchObject({ quality: null, messagingLimit: null });

    const yellow = await quality('YELLOW', 'TIER_10K');
    expect(yellow.code, yellow.stderr).toBe(0);
    expect(yellow.stdout).toContain('is YELLOW (TIER_10K); Parley was told (FLAGGED)');
    await until(async () => (await listNumbers())[0]?.quality === 'YELLOW', 'the rating read');
    expect((await listNumbers())[0]).toMatchObject({ quality: 'YELLOW', messagingLimit: 'TIER_10K' });
    expect(await halfPaceLookup(t.ctx.db)(tenant.number.id)).toBe(true);

    expect((await quality('RED')).code).toBe(0);
    const onB = () => b.app.inject({ method: 'GET', url: `/api/campaigns/${campaign.id}`, headers: key.auth });
    await until(async () => (await onB()).json().status === 'paused', 'the pause seen by the other node');
    expect((await onB()).json()).toMatchObject({
      status: 'paused',
      pausedReason: expect.stringContaining(`The quality rating of ${tenant.number.phone} turned RED`),
    });
    const refused = await postRecipients(b as MessagingTestApp, campaign.id, key.auth, [{ to: '+14155550123' }]);
    expect(refused.statusCode).toBe(409);
    const audit = await t.ctx.db
      .selectFrom('audit_log')
      .select(['actor', 'action'])
      .where('org_id', '=', tenant.org.id)
      .where('target_id', '=', campaign.id)
      .execute();
    expect(audit).toContainEqual({ actor: 'parley', action: 'campaign.paused' });
    const events = await t.ctx.db
      .selectFrom('event_deliveries')
      .select('event_type')
      .where('org_id', '=', tenant.org.id)
      .where('event_type', '=', 'campaign.paused')
      .execute();
    expect(events).toHaveLength(1);

    const table = await runCli(['number', 'list', '--org', tenant.org.id], t.env);
    expect(table.stdout).toMatch(/QUALITY\s+LIMIT/);
    expect(table.stdout).toMatch(/RED\s+TIER_10K/);
    const owner = await signInAs(t.app, (await makeUser(t.ctx, tenant.org.id, 'owner')).email);
    expect((await owner.get(`/dashboard/agents/${tenant.agent.id}`)).body).toContain(
      'Quality rating: <strong class="quality quality-red">RED</strong> · Messaging limit: TIER_10K',
    );
    expect((await owner.get(`/dashboard/campaigns/${campaign.id}`)).body).toContain(
      'Paused by Parley: The quality rating of',
    );
    const metrics = await t.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer scrape-token-1234567890' },
    });
    expect(metrics.body).toContain(
      `parley_number_quality{number="${tenant.number.phone}",messaging_limit="TIER_10K",region="us"} 0`,
    );
  });
});
