import { afterEach, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/audit/audit.service.js';
import { listKeys } from '../../src/keys/key.service.js';
import { getOrganization } from '../../src/orgs/org.service.js';
import { ManualClock } from '../../src/shared/clock.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { cookieFrom, csrfIn, makeUser, PASSWORD, postLogin, signInAs } from '../helpers/dashboard.js';
import { makeAgent, makeKey, makeOrg } from '../helpers/factories.js';

const KEYS = '/dashboard/settings/integrations/api-keys';

describe.each(DIALECTS)('dashboard (%s)', (dialect) => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    while (apps.length > 0) await apps.pop()?.close();
  });
  const start = async (options: Parameters<typeof createTestApp>[1] = {}) => {
    const t = await createTestApp(dialect, options);
    apps.push(t);
    return t;
  };

  it('signs in with an HttpOnly SameSite=Lax cookie, a new session ID each time, and signs out', async () => {
    const { app, ctx } = await start();
    const org = await makeOrg(ctx);
    const user = await makeUser(ctx, org.id, 'owner');

    const first = await postLogin(app, user.email.toUpperCase(), PASSWORD);
    expect(first.statusCode).toBe(303);
    expect(first.headers.location).toBe('/dashboard');
    const line = [first.headers['set-cookie']].flat().find((l) => String(l).startsWith('parley_session='));
    expect(line).toMatch(/; Path=\/dashboard; HttpOnly; SameSite=Lax$/);
    expect(line).not.toMatch(/Secure/);
    const oldCookie = cookieFrom(first.headers['set-cookie'], 'parley_session') ?? '';

    // Signing in again from the same browser: a different session, and the old one is over.
    const second = await postLogin(app, user.email, PASSWORD, { cookie: oldCookie });
    const newCookie = cookieFrom(second.headers['set-cookie'], 'parley_session') ?? '';
    expect(newCookie).not.toBe(oldCookie);
    expect((await app.inject({ url: KEYS, headers: { cookie: oldCookie } })).statusCode).toBe(303);
    const page = await app.inject({ url: KEYS, headers: { cookie: newCookie } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.body).toContain(user.email);

    // Only a hash of the token is stored.
    const stored = await ctx.db.selectFrom('dashboard_sessions').select('token_hash').execute();
    const token = newCookie.split('=')[1] ?? '';
    expect(stored.map((s) => s.token_hash)).not.toContain(token);

    const out = await app.inject({
      method: 'POST',
      url: '/dashboard/logout',
      headers: { cookie: newCookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `_csrf=${encodeURIComponent(csrfIn(page.body))}`,
    });
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/dashboard/login?signed-out=1');
    const after = await app.inject({ url: KEYS, headers: { cookie: newCookie } });
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toBe('/dashboard/login?ended=1');
  });

  it('marks the cookie Secure when the request came over HTTPS through a trusted proxy', async () => {
    const { app, ctx } = await start({ env: { PARLEY_TRUST_PROXY: 'true' } });
    const org = await makeOrg(ctx);
    const user = await makeUser(ctx, org.id);
    const res = await postLogin(app, user.email, PASSWORD, { headers: { 'x-forwarded-proto': 'https' } });
    expect(res.statusCode).toBe(303);
    const line = [res.headers['set-cookie']].flat().find((l) => String(l).startsWith('parley_session='));
    expect(line).toMatch(/; Secure/);
  });

  it('answers a wrong email and a wrong password alike', async () => {
    const { app, ctx } = await start();
    const org = await makeOrg(ctx);
    const user = await makeUser(ctx, org.id);
    const wrongPassword = await postLogin(app, user.email, 'not the password');
    const wrongEmail = await postLogin(app, 'nobody@example.com', PASSWORD);
    for (const res of [wrongPassword, wrongEmail]) {
      expect(res.statusCode).toBe(401);
      expect(res.body).toContain('Wrong email or password.');
      expect(cookieFrom(res.headers['set-cookie'], 'parley_session')).toBeUndefined();
    }
  });

  it('limits failed sign-ins per email and per address, on every node of the database', async () => {
    const env = { PARLEY_SIGNIN_LIMIT_EMAIL: '3', PARLEY_SIGNIN_LIMIT_ADDRESS: '5' };
    const one = await start({ env });
    const org = await makeOrg(one.ctx);
    const user = await makeUser(one.ctx, org.id);
    for (let i = 0; i < 3; i++) expect((await postLogin(one.app, user.email, `wrong ${i}`)).statusCode).toBe(401);
    // Another node of the same database refuses even the right password now.
    const two = await start({ env, shareWith: one });
    const limited = await postLogin(two.app, user.email, PASSWORD);
    expect(limited.statusCode).toBe(429);
    expect(limited.body).toContain('Too many failed sign-ins');
    expect(cookieFrom(limited.headers['set-cookie'], 'parley_session')).toBeUndefined();

    // Per address: two more failures on other emails reach 5 from this address; then anyone is refused.
    const other = await makeUser(one.ctx, org.id, 'admin');
    expect((await postLogin(two.app, 'a@example.com', 'x')).statusCode).toBe(401);
    expect((await postLogin(one.app, 'b@example.com', 'x')).statusCode).toBe(401);
    expect((await postLogin(one.app, other.email, PASSWORD)).statusCode).toBe(429);
  });

  it('ends a session idle longer than PARLEY_DASHBOARD_SESSION_IDLE_MINUTES, not an active one', async () => {
    const clock = new ManualClock();
    const { app, ctx } = await start({ clock, env: { PARLEY_DASHBOARD_SESSION_IDLE_MINUTES: '10' } });
    const org = await makeOrg(ctx);
    const user = await makeUser(ctx, org.id);
    const browser = await signInAs(app, user.email);
    for (let i = 0; i < 3; i++) {
      clock.advance(9 * 60_000);
      expect((await browser.get(KEYS)).statusCode).toBe(200);
    }
    clock.advance(10 * 60_000 + 1);
    const expired = await browser.get(KEYS);
    expect(expired.statusCode).toBe(303);
    expect(expired.headers.location).toBe('/dashboard/login?ended=1');
    const login = await app.inject({ url: '/dashboard/login?ended=1' });
    expect(login.body).toContain('Your session has ended. Sign in again.');
    expect(await ctx.db.selectFrom('dashboard_sessions').selectAll().execute()).toHaveLength(0);

    // A session left behind (a browser closed without signing out) is deleted at the next sign-in.
    await signInAs(app, user.email);
    clock.advance(10 * 60_000 + 1);
    const again = await signInAs(app, user.email);
    expect((await again.get(KEYS)).statusCode).toBe(200);
    expect(await ctx.db.selectFrom('dashboard_sessions').selectAll().execute()).toHaveLength(1);
  });

  it('refuses a change without the session CSRF token (403) and accepts the field or the htmx header', async () => {
    const { app, ctx } = await start();
    const org = await makeOrg(ctx);
    const user = await makeUser(ctx, org.id);
    const browser = await signInAs(app, user.email);
    const form = { label: 'ci', scope: 'organization', permissions: ['channels'] };

    const missing = await browser.post(KEYS, form);
    expect(missing.statusCode).toBe(403);
    expect(missing.body).toContain('CSRF');
    const wrong = await browser.post(KEYS, { ...form, _csrf: `${browser.csrf.slice(0, -2)}xx` });
    expect(wrong.statusCode).toBe(403);
    // Another session's token is no good either.
    const other = await signInAs(app, (await makeUser(ctx, org.id)).email);
    expect((await browser.post(KEYS, { ...form, _csrf: other.csrf })).statusCode).toBe(403);
    expect((await browser.post('/dashboard/logout', {})).statusCode).toBe(403);
    expect(await listKeys(ctx.db, org.id)).toHaveLength(0);

    const viaField = await browser.post(KEYS, { ...form, _csrf: browser.csrf });
    expect(viaField.statusCode).toBe(200);
    const viaHeader = await browser.post(KEYS, form, { 'x-csrf-token': browser.csrf, 'hx-request': 'true' });
    expect(viaHeader.statusCode).toBe(200);
    expect(await listKeys(ctx.db, org.id)).toHaveLength(2);
  });

  it('creates a key shown once, records who did it, and a revoked key gets 401 on its next request', async () => {
    const { app, ctx } = await start();
    const org = await makeOrg(ctx);
    const agent = await makeAgent(ctx, org.id);
    const user = await makeUser(ctx, org.id, 'admin');
    const browser = await signInAs(app, user.email);

    const empty = await browser.get(KEYS);
    expect(empty.body).toContain('No API keys yet');
    expect(empty.body).toContain('Create API key');

    // Bad input is explained in the dialog.
    const bad = await browser.post(
      KEYS,
      { _csrf: browser.csrf, label: 'x', scope: 'agent', agent: agent.id, permissions: ['endusers'] },
      { 'hx-request': 'true' },
    );
    expect(bad.statusCode).toBe(200);
    expect(bad.body).toContain('<dialog');
    expect(bad.body).toMatch(/role="alert"[^>]*>An agent-scoped key cannot hold End-users/);
    const noLabel = await browser.post(KEYS, {
      _csrf: browser.csrf,
      label: ' ',
      scope: 'organization',
      permissions: ['channels'],
    });
    expect(noLabel.statusCode).toBe(400);
    expect(noLabel.body).toContain('A key needs a label');

    const created = await browser.post(
      KEYS,
      { _csrf: browser.csrf, label: 'Billing <app>', scope: 'organization', permissions: ['endusers', 'channels'] },
      { 'hx-request': 'true' },
    );
    expect(created.statusCode).toBe(200);
    expect(created.body).toContain('It will not be shown again.');
    expect(created.body).toContain('Billing &lt;app&gt;');
    const key = /id="new-key" readonly value="([^"]+)"/.exec(created.body)?.[1] ?? '';
    expect(key).toMatch(/^prl_us_/);

    const api = await app.inject({ url: '/api/endusers', headers: { authorization: `Bearer ${key}` } });
    expect(api.statusCode).toBe(200);
    const listed = await browser.get(KEYS);
    expect(listed.body).not.toContain(key);
    expect(listed.body).toContain('Whole organization');
    expect(listed.body).toContain('Channels, End-users');
    const [apiKey] = await listKeys(ctx.db, org.id);
    expect(apiKey?.label).toBe('Billing <app>');

    const agentKey = await browser.post(KEYS, {
      _csrf: browser.csrf,
      label: 'bot',
      scope: 'agent',
      agent: agent.id,
      permissions: ['channels', 'triggers'],
    });
    expect(agentKey.statusCode).toBe(200);
    expect((await browser.get(KEYS)).body).toContain(agent.name);

    const confirm = await browser.get(`${KEYS}/${apiKey?.id}/revoke`, { 'hx-request': 'true' });
    expect(confirm.body).toContain('Revoke API key Billing &lt;app&gt;?');
    const revoked = await browser.post(`${KEYS}/${apiKey?.id}/revoke`, { _csrf: browser.csrf });
    expect(revoked.statusCode).toBe(303);
    const again = await app.inject({ url: '/api/endusers', headers: { authorization: `Bearer ${key}` } });
    expect(again.statusCode).toBe(401);
    const panel = (await browser.get(KEYS)).body;
    expect(panel).toContain('<summary>Revoked keys (1)</summary>');
    expect(panel.slice(panel.indexOf('<summary>Revoked keys'))).toContain(`<tr data-key-id="${apiKey?.id}">`);

    const audit = await listAudit(ctx.db, org.id);
    expect(audit.map((e) => [e.actor, e.action])).toEqual(
      expect.arrayContaining([
        [user.email, 'key.created'],
        [user.email, 'key.revoked'],
        ['cli', 'user.created'],
      ]),
    );
    const page = await browser.get('/dashboard/audit');
    expect(page.body).toContain('Revoked API key');
    expect(page.body).toContain(user.email);
  });

  it('lets members only look, admins manage keys, and only owners upgrade', async () => {
    const { app, ctx } = await start();
    const org = await makeOrg(ctx, 'free');
    const owner = await signInAs(app, (await makeUser(ctx, org.id, 'owner')).email);
    const admin = await signInAs(app, (await makeUser(ctx, org.id, 'admin')).email);
    const member = await signInAs(app, (await makeUser(ctx, org.id, 'member')).email);

    const offer = await admin.get(KEYS);
    expect(offer.body).toContain('API keys come with the paid plan');
    expect(offer.body).not.toContain('Create API key');
    expect(offer.body).toContain('Only an owner of the organization can upgrade it.');
    expect((await admin.post('/dashboard/upgrade', { _csrf: admin.csrf })).statusCode).toBe(403);
    expect((await member.post('/dashboard/upgrade', { _csrf: member.csrf })).statusCode).toBe(403);
    expect((await getOrganization(ctx.db, org.id)).plan).toBe('free');
    expect((await owner.get(KEYS)).body).toMatch(/role="button">Upgrade<\/a>/);
    const upgraded = await owner.post('/dashboard/upgrade', { _csrf: owner.csrf });
    expect(upgraded.statusCode).toBe(303);
    expect((await getOrganization(ctx.db, org.id)).plan).toBe('paid');

    const made = await admin.post(KEYS, {
      _csrf: admin.csrf,
      label: 'a',
      scope: 'organization',
      permissions: ['triggers'],
    });
    expect(made.statusCode).toBe(200);
    const [key] = await listKeys(ctx.db, org.id);
    const seen = await member.get(KEYS);
    expect(seen.statusCode).toBe(200);
    expect(seen.body).toContain(key?.prefix);
    expect(seen.body).not.toContain('Create API key');
    expect(seen.body).not.toContain('/revoke');
    expect(
      (await member.post(KEYS, { _csrf: member.csrf, label: 'm', scope: 'organization', permissions: ['triggers'] }))
        .statusCode,
    ).toBe(403);
    expect((await member.post(`${KEYS}/${key?.id}/revoke`, { _csrf: member.csrf })).statusCode).toBe(403);
    expect((await member.get(`${KEYS}/new`, { 'hx-request': 'true' })).statusCode).toBe(403);
    expect((await listKeys(ctx.db, org.id)).map((k) => k.revokedAt)).toEqual([null]);
    const audit = await listAudit(ctx.db, org.id);
    expect(audit.find((e) => e.action === 'plan.changed')?.details).toEqual({ from: 'free', to: 'paid' });
  });

  it('sends an owner to PARLEY_UPGRADE_URL when it is set', async () => {
    const { app, ctx } = await start({ env: { PARLEY_UPGRADE_URL: 'https://billing.example.com/upgrade' } });
    const org = await makeOrg(ctx, 'free');
    const owner = await signInAs(app, (await makeUser(ctx, org.id, 'owner')).email);
    expect((await owner.get(KEYS)).body).toContain('href="https://billing.example.com/upgrade" role="button">Upgrade');
    expect((await owner.post('/dashboard/upgrade', { _csrf: owner.csrf })).statusCode).toBe(403);
    expect((await getOrganization(ctx.db, org.id)).plan).toBe('free');
  });

  it("shows nothing of another organization's keys or audit log, and refuses to act on them", async () => {
    const { app, ctx } = await start();
    const orgA = await makeOrg(ctx);
    const orgB = await makeOrg(ctx);
    const keyA = await makeKey(ctx, orgA.id);
    const userA = await makeUser(ctx, orgA.id, 'owner');
    await signInAs(app, userA.email);
    const b = await signInAs(app, (await makeUser(ctx, orgB.id, 'owner')).email);

    const page = await b.get(KEYS);
    expect(page.body).not.toContain(keyA.prefix);
    expect(page.body).not.toContain(keyA.label);
    expect((await b.get(`${KEYS}/${keyA.id}/revoke`, { 'hx-request': 'true' })).statusCode).toBe(404);
    expect((await b.get(`${KEYS}?revoke=${keyA.id}`)).statusCode).toBe(404);
    expect((await b.post(`${KEYS}/${keyA.id}/revoke`, { _csrf: b.csrf })).statusCode).toBe(404);
    expect((await listKeys(ctx.db, orgA.id))[0]?.revokedAt).toBeNull();
    const audit = await b.get('/dashboard/audit');
    expect(audit.body).toContain('Added person');
    expect(audit.body).not.toContain(orgA.name);
    expect(audit.body).not.toContain(userA.email);
  });

  it('serves its assets itself and stays out of the API description', async () => {
    const { app } = await start();
    for (const [file, type] of [
      ['htmx.min.js', 'text/javascript'],
      ['pico.classless.min.css', 'text/css'],
      ['dashboard.js', 'text/javascript'],
      ['dashboard.css', 'text/css'],
      ['parley.svg', 'image/svg+xml'],
    ] as const) {
      const res = await app.inject({ url: `/dashboard/static/${file}` });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain(type);
      expect(res.body.length).toBeGreaterThan(100);
    }
    expect((await app.inject({ url: '/dashboard/static/..%2Fpackage.json' })).statusCode).toBe(404);
    const doc = await app.inject({ url: '/api/openapi.json' });
    expect(doc.body).not.toContain('/dashboard');
    expect((await app.inject({ url: '/dashboard' })).headers.location).toBe('/dashboard/login');
    expect((await app.inject({ url: KEYS })).headers.location).toBe('/dashboard/login');
  });
});
