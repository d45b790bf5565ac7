import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { DEFAULT_PASSWORD_COST, hashPassword, needsRehash, verifyPassword } from '../../src/dashboard/password.js';
import { ManualClock } from '../../src/shared/clock.js';
import { createTestApp, type TestApp, type TestAppOptions } from '../helpers/app.js';
import { makeUser, PASSWORD, postLogin, signInAs } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';

const KEYS = '/dashboard/settings/integrations/api-keys';

/** The hash and session rules are the same on either database: SQLite only. */
describe('password hashes and session ages (sqlite)', () => {
  const apps: TestApp[] = [];
  const start = async (options: TestAppOptions = {}) => {
    const t = await createTestApp('sqlite', options);
    apps.push(t);
    return t;
  };
  afterEach(async () => {
    for (const t of apps.splice(0)) await t.close();
  });

  it('the default cost is 2^17 (N = 131072, r = 8), which Node runs with its maxmem raised', async () => {
    expect(DEFAULT_PASSWORD_COST).toBe(17);
    expect(loadConfig({}, { PARLEY_DATA_DIR: '/nonexistent' }).dashboard.passwordCost).toBe(17);
    const stored = await hashPassword(PASSWORD);
    expect(stored).toMatch(/^scrypt\$131072\$8\$1\$/);
    expect(await verifyPassword(PASSWORD, stored)).toBe(true);
    expect(await verifyPassword(`${PASSWORD}!`, stored)).toBe(false);
    expect(needsRehash(stored)).toBe(false);
    expect(needsRehash(await hashPassword(PASSWORD, 15))).toBe(true);
    // A planted cost past any this server makes is refused, not run.
    expect(await verifyPassword(PASSWORD, stored.replace('131072', String(2 ** 30)))).toBe(false);
  }, 30_000);

  it('an older hash signs in and is remade at the configured cost; the password still works', async () => {
    const t = await start({ env: { PARLEY_PASSWORD_HASH_COST: '13' } });
    const org = await makeOrg(t.ctx);
    const user = await makeUser(t.ctx, org.id);
    // What an earlier version stored: a lower cost.
    const old = await hashPassword(PASSWORD, 11);
    await t.ctx.db.updateTable('users').set({ password_hash: old }).where('id', '=', user.id).execute();

    const wrong = await postLogin(t.app, user.email, 'not the password at all');
    expect(wrong.statusCode).toBe(401);
    const hashOf = async () =>
      (await t.ctx.db.selectFrom('users').select('password_hash').where('id', '=', user.id).executeTakeFirstOrThrow())
        .password_hash;
    expect(await hashOf()).toBe(old);

    const browser = await signInAs(t.app, user.email);
    expect((await browser.get(KEYS)).statusCode).toBe(200);
    const raised = await hashOf();
    expect(raised).toMatch(/^scrypt\$8192\$8\$1\$/);
    expect(raised).not.toBe(old);
    await signInAs(t.app, user.email);
    expect(await hashOf()).toBe(raised);
  });

  it('a session ends PARLEY_DASHBOARD_SESSION_MAX_HOURS after sign-in, however busy', async () => {
    const clock = new ManualClock();
    const t = await start({ clock, env: { PARLEY_DASHBOARD_SESSION_MAX_HOURS: '2' } });
    expect(t.ctx.config.dashboard.sessionMaxMs).toBe(2 * 3_600_000);
    const org = await makeOrg(t.ctx);
    const user = await makeUser(t.ctx, org.id);
    const browser = await signInAs(t.app, user.email);
    // Used every 30 minutes (well within the 60-minute idle time) for two hours.
    for (let i = 0; i < 4; i++) {
      clock.advance(30 * 60_000);
      expect((await browser.get(KEYS)).statusCode).toBe(200);
    }
    clock.advance(1);
    const ended = await browser.get(KEYS);
    expect(ended.statusCode).toBe(303);
    expect(ended.headers.location).toBe('/dashboard/login?ended=1');
    expect(await t.ctx.db.selectFrom('dashboard_sessions').selectAll().execute()).toHaveLength(0);

    // One left behind past its age goes at the next sign-in.
    await signInAs(t.app, user.email);
    clock.advance(2 * 3_600_000 + 1);
    await signInAs(t.app, user.email);
    expect(await t.ctx.db.selectFrom('dashboard_sessions').selectAll().execute()).toHaveLength(1);
  });

  it('the default maximum session age is 12 hours', () => {
    expect(loadConfig({}, { PARLEY_DATA_DIR: '/nonexistent' }).dashboard.sessionMaxMs).toBe(12 * 3_600_000);
  });
});
