import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeUser, PASSWORD, postLogin } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';

/**
 * The sign-in limit holds against parallel requests: each attempt is counted before its password
 * is checked, in one atomic step, so twelve wrong passwords sent at once for one email (limit 5)
 * get five refusals of the password and seven of the limit, and only five password hashes run.
 * Both dialects: the atomic step is SQL of each (SQLite's one writer, PostgreSQL's advisory lock).
 */
describe.each(DIALECTS)('the sign-in throttle under parallel requests (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(dialect, { env: { PARLEY_SIGNIN_LIMIT_EMAIL: '5', PARLEY_SIGNIN_LIMIT_ADDRESS: '100' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('checks at most the limit of wrong passwords sent at once for one email', async () => {
    const org = await makeOrg(t.ctx);
    const user = await makeUser(t.ctx, org.id);
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => postLogin(t.app, user.email, `wrong ${i}`)));
    const statuses = answers.map((res) => res.statusCode).sort();
    expect(statuses).toEqual([...Array(5).fill(401), ...Array(7).fill(429)]);
    // The right password is refused too while the limit holds.
    expect((await postLogin(t.app, user.email, PASSWORD)).statusCode).toBe(429);
  });

  it('a successful sign-in does not count against its address, nor its email', async () => {
    const org = await makeOrg(t.ctx);
    const user = await makeUser(t.ctx, org.id);
    const failures = async () =>
      (await t.ctx.db.selectFrom('sign_in_failures').select('subject').execute()).map((r) => r.subject).sort();
    const before = await failures();
    for (let i = 0; i < 3; i++) expect((await postLogin(t.app, user.email, PASSWORD)).statusCode).toBe(303);
    expect(await failures()).toEqual(before);
  });
});

/** A cookie that is not valid percent-encoding is ignored, not a 500 (one planted from a sibling subdomain). */
describe('a malformed session cookie (sqlite)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('sqlite');
  });
  afterAll(async () => {
    await t.close();
  });

  it('is treated as no session: sign-in works and pages send the person to sign in', async () => {
    const org = await makeOrg(t.ctx);
    const user = await makeUser(t.ctx, org.id);
    const planted = 'parley_session=%E0%A4%A';
    const page = await t.app.inject({
      method: 'GET',
      url: '/dashboard/settings/integrations/api-keys',
      headers: { cookie: planted },
    });
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe('/dashboard/login');
    const login = await t.app.inject({ method: 'GET', url: '/dashboard/login', headers: { cookie: planted } });
    expect(login.statusCode).toBe(200);
    expect((await postLogin(t.app, user.email, PASSWORD, { cookie: planted })).statusCode).toBe(303);
  });
});
