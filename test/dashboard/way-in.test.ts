import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createEndpoint } from '../../src/events/endpoint.service.js';
import { startServer } from '../../src/server.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { campaignCounts, makeCampaignTenant, phones, postRecipients } from '../helpers/campaigns.js';
import { freePortRange } from '../helpers/cli.js';
import { makeUser, PASSWORD, postLogin, signInAs } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';
import { captureLog } from '../helpers/log-capture.js';
import { createMessagingApp, sandboxInbound } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';

/** How a person finds the dashboard: `/`, the start-up log, the home page a sign-in lands on, a 404 page. */
describe.each(DIALECTS)('the way in (%s)', (dialect) => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    while (apps.length > 0) await apps.pop()?.close();
  });
  const start = async () => {
    const t = await createTestApp(dialect);
    apps.push(t);
    return t;
  };

  it('leads from / to the dashboard, and from there to sign-in', async () => {
    const { app } = await start();
    const root = await app.inject({ url: '/' });
    expect(root.statusCode).toBe(303);
    expect(root.headers.location).toBe('/dashboard');
    expect((await app.inject({ url: '/dashboard/' })).headers.location).toBe('/dashboard');
    const home = await app.inject({ url: '/dashboard' });
    expect(home.statusCode).toBe(303);
    expect(home.headers.location).toBe('/dashboard/login');
  });

  it('answers an unknown dashboard page with a page, in the frame when signed in; API 404s stay JSON', async () => {
    const { app, ctx } = await start();
    const org = await makeOrg(ctx);
    const user = await makeUser(ctx, org.id);

    const out = await app.inject({ url: '/dashboard/nope' });
    expect(out.statusCode).toBe(404);
    expect(out.headers['content-type']).toContain('text/html');
    expect(out.headers['content-security-policy']).toContain("script-src 'self'");
    expect(out.body).toContain('<h1>Not found</h1>');
    expect(out.body).toContain('There is no such page in the dashboard.');
    expect(out.body).toContain('href="/dashboard/login">Sign in</a>');
    expect(out.body).not.toContain('aria-label="Main"');

    const b = await signInAs(app, user.email);
    for (const url of ['/dashboard/nope', '/dashboard/settings/nope/deeper?x=1']) {
      const inFrame = await b.get(url);
      expect(inFrame.statusCode, url).toBe(404);
      expect(inFrame.body).toContain('<h1>Not found</h1>');
      expect(inFrame.body).toContain('aria-label="Main"');
      expect(inFrame.body).toContain(user.email);
    }
    const posted = await b.post('/dashboard/nope', { _csrf: b.csrf });
    expect(posted.statusCode).toBe(404);
    expect(posted.headers['content-type']).toContain('text/html');

    const api = await app.inject({ url: '/api/nope' });
    expect(api.statusCode).toBe(404);
    expect(api.json()).toEqual({ error: 'No route GET /api/nope.', code: 'NOT_FOUND' });
  });

  it('lands a sign-in on Home: agents with numbers and hooks, open conversations, running campaigns', async () => {
    const t = await createMessagingApp(dialect);
    apps.push(t);
    const { app, ctx } = t;
    const tenant = await makeCampaignTenant(ctx);
    const user = await makeUser(ctx, tenant.org.id, 'admin');
    await createEndpoint(ctx, {
      orgId: tenant.org.id,
      agentId: tenant.agent.id,
      url: 'https://bot.example.com/hook',
    });
    expect(
      (
        await postRecipients(
          t,
          tenant.campaign.id,
          tenant.campaignKey.auth,
          phones(4).map((to) => ({ to })),
        )
      ).statusCode,
    ).toBe(202);
    expect((await sandboxInbound(t, tenant.agentKey.auth, '+14155550188', 'hello')).statusCode).toBe(200);
    // The four deliveries are sent in the background, each opening a conversation; the home page
    // counts them once they are out (so five open conversations with the end user who wrote in).
    await until(async () => {
      const c = await campaignCounts(t, tenant.campaign.id, tenant.campaignKey.auth);
      return c.sent + c.delivered + c.read + c.failed === 4;
    }, 'the four deliveries sent');

    const login = await postLogin(app, user.email, PASSWORD);
    expect(login.statusCode).toBe(303);
    expect(login.headers.location).toBe('/dashboard');
    const b = await signInAs(app, user.email);
    const home = await b.get('/dashboard');
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain(`<h1>${tenant.org.name}</h1>`);
    expect(home.body).toContain('aria-current="page">Home</a>');
    expect(home.body).toMatch(/id="open-conversations">5<\/span> <span class="what">open conversations<\/span>/);
    expect(home.body).toContain('href="/dashboard/conversations?status=open"');
    // The agent with its number and its hook's health (the conversations' events may have reached it by now); the other agent has neither.
    const row = new RegExp(
      `data-agent-id="${tenant.agent.id}">.*?${tenant.number.phone.replace('+', '\\+')}.*?(No deliveries yet|Working|Failing)</span> <code>https://bot.example.com/hook</code> <span class="health">Last delivery: [^<]+\\. Failures in the last hour: \\d+\\.`,
      's',
    );
    expect(home.body).toMatch(row);
    expect(home.body).toMatch(new RegExp(`data-agent-id="${tenant.other.id}">.*?No number yet.*?No hook`, 's'));
    // The running campaign and its progress out of its four deliveries.
    expect(home.body).toContain(`href="/dashboard/campaigns/${tenant.campaign.id}">Spring launch</a>`);
    expect(home.body).toMatch(/value="4" max="4" aria-label="Progress of Spring launch"/);
    expect(home.body).toContain('4 of 4 sent');
    // Keys, agents and a hook exist: no next steps.
    expect(home.body).not.toContain('Next steps');
  });

  it('shows an empty organization its next steps', async () => {
    const { app, ctx } = await start();
    const org = await makeOrg(ctx, 'free');
    const owner = await makeUser(ctx, org.id, 'owner');
    const home = await (await signInAs(app, owner.email)).get('/dashboard');
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain('Next steps');
    expect(home.body).toContain('Create an API key');
    expect(home.body).toContain('Keys come with the paid plan');
    expect(home.body).toContain(`npx parley agent create --org ${org.id}`);
    expect(home.body).toContain(`npx parley endpoint create --org ${org.id} --agent agt_...`);
    expect(home.body).toMatch(/id="open-conversations">0<\/span> <span class="what">open conversations/);
    expect(home.body).toContain('No campaign is running.');
  });

  it("brands the API reference with Parley's name and mark", async () => {
    const { app } = await start();
    const page = await app.inject({ url: '/api/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<title>Parley API reference</title>');
    expect(page.body).toContain('theme/parley.svg');
    const icon = await app.inject({ url: '/api/docs/static/theme/parley.svg' });
    expect(icon.statusCode).toBe(200);
    expect(icon.body).toContain('aria-label="Parley"');
    const init = await app.inject({ url: '/api/docs/static/swagger-initializer.js' });
    expect(init.body).toContain('data:image/svg+xml;base64,');
  });
});

describe('the start-up log (sqlite)', () => {
  it('names the dashboard and the API reference', async () => {
    const log = captureLog('info');
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-way-in-'));
    const [port] = [await freePortRange(1)];
    const server = await startServer(loadConfig({ port, data: dataDir }, { LOG_LEVEL: 'silent' }), {
      logRequests: false,
      logger: log.logger,
    });
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
    const line = log
      .text()
      .split('\n')
      .find((l) => l.includes('"dashboard"'));
    expect(JSON.parse(line ?? '{}')).toMatchObject({
      dashboard: `http://127.0.0.1:${port}/dashboard`,
      apiReference: `http://127.0.0.1:${port}/api/docs`,
      msg: `dashboard at http://127.0.0.1:${port}/dashboard, API reference at http://127.0.0.1:${port}/api/docs`,
    });
  });
});
