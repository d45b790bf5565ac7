import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/audit/audit.service.js';
import { INVITATION_TTL_MS } from '../../src/dashboard/people.service.js';
import { listUsers } from '../../src/dashboard/user.service.js';
import { ManualClock } from '../../src/shared/clock.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { cookieFrom, makeUser, PASSWORD, type SignedIn, signInAs } from '../helpers/dashboard.js';
import { makeOrg } from '../helpers/factories.js';

const HTMX = { 'hx-request': 'true' };
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const linkIn = (body: string) => /id="invite-link" readonly value="([^"]+)"/.exec(body)?.[1]?.replace(/&amp;/g, '&');

describe.each(DIALECTS)('dashboard: people and invitations (%s)', (dialect) => {
  let t: TestApp;
  const clock = new ManualClock();
  beforeAll(async () => {
    t = await createTestApp(dialect, { clock });
  });
  afterAll(async () => {
    await t.close();
  });

  async function tenant() {
    const org = await makeOrg(t.ctx);
    const ownerUser = await makeUser(t.ctx, org.id, 'owner');
    return { org, ownerUser, owner: await signInAs(t.app, ownerUser.email) };
  }
  const invite = (who: SignedIn, email: string, role: string, headers = {}) =>
    who.post('/dashboard/people/invitations', { _csrf: who.csrf, email, role }, headers);
  const accept = (token: string, password: string, confirm = password) =>
    t.app.inject({
      method: 'POST',
      url: '/dashboard/invitation',
      headers: FORM,
      payload: new URLSearchParams({ token, password, confirm }).toString(),
    });

  it('lists people; invites with a link shown once that works once and signs the person in', async () => {
    const { org, ownerUser, owner } = await tenant();
    const page = await owner.get('/dashboard/people');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`${ownerUser.email} (you)</td><td>Owner</td>`);
    // The owner signed in just now: the last sign-in is known.
    expect(page.body).not.toContain('Not known');

    const bad = await invite(owner, 'not-an-email', 'admin');
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toMatch(/<dialog aria-labelledby="invite-title" data-modal open>/);
    expect(bad.body).toContain('&quot;not-an-email&quot; is not an email address.');
    const taken = await invite(owner, ownerUser.email, 'admin', HTMX);
    expect(taken.statusCode).toBe(200);
    expect(taken.body).toContain('already signs in to a Parley dashboard.');

    const email = `new-${randomBase62(6).toLowerCase()}@example.com`;
    const made = await invite(owner, email, 'admin', HTMX);
    expect(made.statusCode).toBe(200);
    expect(made.body).toContain('It will not be shown again.');
    expect(made.body).toContain('data-copy="#invite-link"');
    const link = linkIn(made.body) ?? '';
    const token = new URL(link).searchParams.get('token') ?? '';
    expect(link).toMatch(/^http:\/\/localhost(:\d+)?\/dashboard\/invitation\?token=/);
    expect(token.length).toBeGreaterThan(30);
    // Only the token's hash is stored.
    const stored = await t.ctx.db.selectFrom('invitations').selectAll().where('email', '=', email).execute();
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored)).not.toContain(token);
    expect(stored[0]?.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
    const listed = await owner.get('/dashboard/people');
    expect(listed.body).toContain(`<td>${email}</td><td>Admin</td><td>${ownerUser.email}</td>`);
    expect(listed.body).not.toContain(token);

    const opened = await t.app.inject({ method: 'GET', url: `/dashboard/invitation?token=${token}` });
    expect(opened.statusCode).toBe(200);
    expect(opened.body).toContain(`Join ${org.name}`);
    expect(opened.body).toContain(email);
    expect((await accept(token, 'short')).body).toContain('A password needs at least 10 characters.');
    expect((await accept(token, PASSWORD, 'something else')).body).toContain('The two passwords differ.');
    const joined = await accept(token, PASSWORD);
    expect(joined.statusCode).toBe(303);
    const cookie = cookieFrom(joined.headers['set-cookie'], 'parley_session') ?? '';
    const home = await t.app.inject({ method: 'GET', url: '/dashboard/people', headers: { cookie } });
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain(`${email} (you)</td><td>Admin</td>`);
    // The link works once.
    expect((await t.app.inject({ method: 'GET', url: `/dashboard/invitation?token=${token}` })).statusCode).toBe(404);
    const again = await accept(token, PASSWORD);
    expect(again.statusCode).toBe(404);
    expect(again.body).toContain('This invitation link does not work');
    expect((await listUsers(t.ctx.db, org.id)).map((u) => u.email)).toContain(email);
    // The new person signs in with the password chosen.
    await signInAs(t.app, email, PASSWORD);

    const actions = (await listAudit(t.ctx.db, org.id, { limit: 20 })).map((a) => a.action);
    expect(actions).toEqual(expect.arrayContaining(['user.invited', 'user.created']));
    expect((await owner.get('/dashboard/audit')).body).toContain('Invited person');
  });

  it('an invitation link expires after 7 days; a withdrawn one never works', async () => {
    const { owner } = await tenant();
    const first = linkIn((await invite(owner, `x-${randomBase62(6).toLowerCase()}@example.com`, 'member')).body) ?? '';
    const withdrawnEmail = `y-${randomBase62(6).toLowerCase()}@example.com`;
    const second = await invite(owner, withdrawnEmail, 'member');
    const withdrawnToken = new URL(linkIn(second.body) ?? '').searchParams.get('token') ?? '';
    const listed = (await owner.get('/dashboard/people')).body;
    const id = new RegExp(`data-invitation-id="(inv_[^"]+)"><td>${withdrawnEmail}<`).exec(listed)?.[1] ?? '';
    expect(id).not.toBe('');
    expect((await owner.post(`/dashboard/people/invitations/${id}/withdraw`, { _csrf: owner.csrf })).statusCode).toBe(
      303,
    );
    const token = new URL(first).searchParams.get('token') ?? '';
    const works = await Promise.all(
      [token, withdrawnToken].map(
        async (tk) => (await t.app.inject({ method: 'GET', url: `/dashboard/invitation?token=${tk}` })).statusCode,
      ),
    );
    expect(works).toEqual([200, 404]);
    expect((await owner.get('/dashboard/people')).body).not.toContain(withdrawnEmail);
    clock.advance(INVITATION_TTL_MS + 1000);
    try {
      const late = await accept(token, PASSWORD);
      expect(late.statusCode).toBe(404);
      expect(late.body).toContain('has expired');
    } finally {
      clock.set(Date.now());
    }
  });

  it('owners and admins remove people (sessions end); only owners grant or remove owners; the last owner stays; members change nothing', async () => {
    const { org, ownerUser, owner } = await tenant();
    const adminUser = await makeUser(t.ctx, org.id, 'admin');
    const admin = await signInAs(t.app, adminUser.email);
    const memberUser = await makeUser(t.ctx, org.id, 'member');
    const member = await signInAs(t.app, memberUser.email);

    const grant = await invite(admin, 'boss@example.com', 'owner');
    expect(grant.statusCode).toBe(400);
    expect(grant.body).toContain('Only an owner can make someone an owner.');
    expect((await admin.get('/dashboard/people?invite=1')).body).not.toContain('<option value="owner"');
    expect((await owner.get('/dashboard/people?invite=1')).body).toContain('<option value="owner"');

    const memberPage = await member.get('/dashboard/people');
    expect(memberPage.statusCode).toBe(200);
    expect(memberPage.body).not.toContain('Invite person');
    expect(memberPage.body).not.toContain('/remove');
    for (const [url, form] of [
      ['/dashboard/people/invitations', { email: 'z@example.com', role: 'member' }],
      [`/dashboard/people/${adminUser.id}/remove`, {}],
    ] as const) {
      const refused = await member.post(url, { _csrf: member.csrf, ...form });
      expect(refused.statusCode).toBe(403);
      expect(refused.body).toContain('Only owners and admins');
    }

    // An admin cannot remove an owner; nobody removes the last owner.
    const byAdmin = await admin.post(`/dashboard/people/${ownerUser.id}/remove`, { _csrf: admin.csrf });
    expect(byAdmin.statusCode).toBe(403);
    expect(byAdmin.body).toContain('Only an owner can remove an owner.');
    const last = await owner.post(`/dashboard/people/${ownerUser.id}/remove`, { _csrf: owner.csrf });
    expect(last.statusCode).toBe(409);
    expect(last.body).toContain('is the last owner of the organization and cannot be removed.');

    const confirm = await owner.get(`/dashboard/people?remove=${memberUser.id}`);
    expect(confirm.body).toContain(`Remove ${memberUser.email}?`);
    expect(confirm.body).toContain('<button type="submit" class="danger">Remove</button>');
    const removed = await admin.post(`/dashboard/people/${memberUser.id}/remove`, { _csrf: admin.csrf }, HTMX);
    expect(removed.statusCode).toBe(204);
    expect(removed.headers['hx-redirect']).toBe('/dashboard/people');
    // Their session ended with them.
    expect((await member.get('/dashboard/people')).statusCode).toBe(303);
    expect((await listUsers(t.ctx.db, org.id)).map((u) => u.id)).not.toContain(memberUser.id);
    // Another organization's person is not found; no CSRF token, no change.
    const stranger = (await tenant()).owner;
    expect((await stranger.post(`/dashboard/people/${adminUser.id}/remove`, { _csrf: stranger.csrf })).statusCode).toBe(
      404,
    );
    expect((await owner.post(`/dashboard/people/${adminUser.id}/remove`, {})).statusCode).toBe(403);
    const actions = (await listAudit(t.ctx.db, org.id, { limit: 20 })).map((a) => a.action);
    expect(actions).toContain('user.removed');
  });
});
