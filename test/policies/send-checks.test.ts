import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCampaign } from '../../src/campaigns/campaign.service.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { makeUser, signInAs } from '../helpers/dashboard.js';
import { makeTrigger } from '../helpers/factories.js';
import {
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  quiet,
  randomPhone,
} from '../helpers/messaging.js';
import { setSandboxTemplateStatus, syncCatalogue } from '../helpers/policies.js';
import { sandboxLog } from '../helpers/sandbox-log.js';
import { until } from '../helpers/wait.js';

type Tenant = Awaited<ReturnType<typeof makeSendingTenant>>;

describe.each(DIALECTS)('triggers and campaigns check their template (%s)', (dialect) => {
  let t: MessagingTestApp;
  let tenant: Tenant;
  let b: TestApp | undefined;
  beforeAll(async () => {
    t = await createMessagingApp(dialect);
    tenant = await makeSendingTenant(t.ctx);
    await syncCatalogue(t, { orgId: tenant.org.id });
  });
  afterAll(async () => {
    await b?.close();
    await t.close();
  });

  it('a trigger naming an unknown template is refused on the dashboard and by the CLI', async () => {
    const owner = await signInAs(t.app, (await makeUser(t.ctx, tenant.org.id, 'owner')).email);
    const page = await owner.post(`/dashboard/agents/${tenant.agent.id}/triggers`, {
      _csrf: owner.csrf,
      name: 'Shipped',
      template: 'order_updat',
      language: 'en_US',
    });
    expect(page.statusCode).toBe(400);
    expect(page.body).toContain(
      'The trigger was not added: template order_updat (en_US) does not exist on this agent&#39;s number.',
    );
    const cli = await runCli(
      [
        'trigger',
        'create',
        '--org',
        tenant.org.id,
        '--agent',
        tenant.agent.id,
        '--name',
        'x',
        '--template',
        'order_update',
        '--language',
        'fr_FR',
      ],
      t.env,
    );
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain('template order_update (fr_FR) does not exist on this agent');
  });

  it('a campaign naming a template with the wrong default parameters is refused', async () => {
    await expect(
      createCampaign(t.ctx.db, t.ctx.clock, {
        orgId: tenant.org.id,
        name: 'Spring',
        agentId: tenant.agent.id,
        template: 'spring_sale',
        language: 'en_US',
        parameters: { body: [] },
      }),
    ).rejects.toThrow('template spring_sale (en_US) expects 1 body parameter, got 0');
    const cli = await runCli(
      [
        'campaign',
        'create',
        '--org',
        tenant.org.id,
        '--name',
        'x',
        '--agent',
        tenant.agent.id,
        '--template',
        'nope',
        '--language',
        'en_US',
      ],
      t.env,
    );
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain('template nope (en_US) does not exist');
  });

  it('the trigger endpoint checks the catalogue: nothing reaches the provider', async () => {
    await makeTrigger(t.ctx, tenant.org.id, tenant.agent.id, 'ship', 'order_update');
    const to = randomPhone();
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/triggers/${tenant.agent.id}/ship`,
      headers: tenant.orgKey.auth,
      payload: { to, parameters: { header: ['Ada'], body: ['A-1'] } },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      success: false,
      error: 'Template order_update (en_US) expects 2 body parameters, got 1.',
    });
    expect(await sandboxLog(t, tenant.orgKey.auth, { to })).toEqual([]);
  });

  it('a template paused through one node is refused at once by another', async () => {
    b = quiet(await createTestApp(dialect, { shareWith: t, ownDataDir: dialect === 'postgres', workJobs: false }));
    const sendOnB = (to: string) =>
      (b as TestApp).app.inject({
        method: 'POST',
        url: '/api/channels/send',
        headers: tenant.agentKey.auth,
        payload: {
          channel: 'msgapp',
          to,
          type: 'template',
          template: { name: 'spring_sale', language: 'en_US', parameters: { body: ['20%'] } },
        },
      });
    // B keeps the catalogue in memory after its first send.
    expect((await sendOnB(randomPhone())).statusCode).toBe(200);
    await setSandboxTemplateStatus(t, 'spring_sale', 'PAUSED');
    const list = () => t.app.inject({ method: 'GET', url: '/api/templates', headers: tenant.agentKey.auth });
    await until(
      async () =>
        list().then((r) => r.json().data.find((x: { name: string }) => x.name === 'spring_sale')?.status === 'PAUSED'),
      'the pause applied',
    );
    const refused = await sendOnB(randomPhone());
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toContain('is PAUSED, not APPROVED');
  });
});
