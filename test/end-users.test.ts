import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordInboundEndUser } from '../src/end-users/end-user.service.js';
import { createTestApp, DIALECTS, type TestApp } from './helpers/app.js';
import { contractViolation, listOperations } from './helpers/contract.js';
import { makeAgent, makeCampaign, makeKey, makeOrg, makeTenant } from './helpers/factories.js';

type Headers = Record<string, string>;

/** Every documented response is checked against /api/openapi.json as it goes by. */
async function call(app: FastifyInstance, method: string, url: string, headers: Headers, payload?: unknown) {
  const res = await app.inject({
    method: method as InjectOptions['method'],
    url,
    headers,
    ...(payload !== undefined ? { payload: payload as InjectOptions['payload'] } : {}),
  });
  const path = url.split('?')[0] ?? url;
  const documented = listOperations(app).some(
    (op) => op.method === method && new RegExp(`^${op.path.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path),
  );
  // 405 answers come from undocumented catch-all routes (GET /api/endusers/batch looks like a by-ID path).
  if (documented && res.statusCode !== 405) {
    const violation = contractViolation(app, method, path, res);
    if (violation) throw new Error(violation);
  }
  return res;
}

const CODED = { error: expect.any(String), code: expect.any(String) };

describe.each(DIALECTS)('end users (%s)', (dialect) => {
  let t: TestApp;
  let auth: Headers;
  let orgId: string;
  let n = 0;
  const uniq = () => `${Date.now().toString(36)}${(n++).toString(36)}`;
  const email = () => `user.${uniq()}@example.com`;
  let phoneSeq = 1000;
  const phone = () => `+1415555${String(phoneSeq++).padStart(4, '0')}`;

  const post = (body: unknown, headers = auth) => call(t.app, 'POST', '/api/endusers', headers, body);
  const create = async (body: Record<string, unknown>, headers = auth) => {
    const res = await post({ origin: 'manual', ...body }, headers);
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  };

  beforeAll(async () => {
    t = await createTestApp(dialect);
    const tenant = await makeTenant(t.ctx);
    auth = tenant.orgKey.auth;
    orgId = tenant.org.id;
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('authentication and scope', () => {
    it('401 UNAUTHORIZED without a key or with a bad one', async () => {
      for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: 'Basic x' }] as Headers[]) {
        const res = await call(t.app, 'GET', '/api/endusers', headers);
        expect(res.statusCode).toBe(401);
        expect(res.json()).toEqual({ ...CODED, code: 'UNAUTHORIZED' });
      }
    });

    it('403 FORBIDDEN for agent and campaign keys, and org keys without End-users', async () => {
      const org = await makeOrg(t.ctx);
      const agent = await makeAgent(t.ctx, org.id);
      const campaign = await makeCampaign(t.ctx, org.id);
      const keys = [
        await makeKey(t.ctx, org.id, { scope: 'agent', agentId: agent.id, permissions: ['channels', 'triggers'] }),
        await makeKey(t.ctx, org.id, { scope: 'campaign', campaignId: campaign.id }),
        await makeKey(t.ctx, org.id, { permissions: ['channels'] }),
      ];
      for (const key of keys) {
        for (const [method, url, body] of [
          ['GET', '/api/endusers', undefined],
          ['POST', '/api/endusers', { origin: 'manual', name: 'x' }],
          ['POST', '/api/endusers/batch', { origin: 'manual', endUsers: [{ name: 'x' }] }],
          ['GET', '/api/endusers/eu_x', undefined],
          ['PATCH', '/api/endusers/eu_x', { name: 'y' }],
          ['DELETE', '/api/endusers/eu_x', undefined],
        ] as const) {
          const res = await call(t.app, method, url, key.auth, body);
          expect(res.statusCode, `${method} ${url}`).toBe(403);
          expect(res.json()).toEqual({ ...CODED, code: 'FORBIDDEN' });
        }
      }
    });

    it('403 FORBIDDEN for a non-organization key even if it somehow holds End-users', async () => {
      const agent = await makeAgent(t.ctx, orgId);
      const key = await makeKey(t.ctx, orgId, { scope: 'agent', agentId: agent.id, permissions: ['channels'] });
      await t.ctx.db
        .updateTable('api_keys')
        .set({ permissions: 'channels,endusers' })
        .where('id', '=', key.id)
        .execute();
      const res = await call(t.app, 'GET', '/api/endusers', key.auth);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ code: 'FORBIDDEN' });
    });

    it('403 FORBIDDEN on the free plan', async () => {
      const org = await makeOrg(t.ctx);
      const key = await makeKey(t.ctx, org.id);
      await t.ctx.db.updateTable('organizations').set({ plan: 'free' }).where('id', '=', org.id).execute();
      const res = await call(t.app, 'GET', '/api/endusers', key.auth);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ code: 'FORBIDDEN' });
    });

    it("another organization's record is NOT_FOUND and never listed", async () => {
      const mine = await create({ email: email(), tags: ['iso'] });
      const other = await makeTenant(t.ctx);
      const h = other.orgKey.auth;
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { name: 'stolen' }],
        ['DELETE', undefined],
      ] as const) {
        const res = await call(t.app, method, `/api/endusers/${mine._id}`, h, body);
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({ ...CODED, code: 'NOT_FOUND' });
      }
      const list = await call(t.app, 'GET', '/api/endusers?tag=iso', h);
      expect(list.json().data).toEqual([]);
      // The same email is free in another organization.
      const res = await call(t.app, 'POST', '/api/endusers', h, { origin: 'manual', email: mine.email });
      expect(res.statusCode).toBe(201);
      const still = await call(t.app, 'GET', `/api/endusers/${mine._id}`, auth);
      expect(still.json().name).toBeNull();
    });
  });

  describe('routing', () => {
    it('405 METHOD_NOT_ALLOWED with Allow', async () => {
      for (const [method, url, allow] of [
        ['PUT', '/api/endusers/x', 'GET, PATCH, DELETE'],
        ['POST', '/api/endusers/x', 'GET, PATCH, DELETE'],
        ['DELETE', '/api/endusers', 'GET, POST'],
        ['PUT', '/api/endusers', 'GET, POST'],
        ['PATCH', '/api/endusers', 'GET, POST'],
        ['GET', '/api/endusers/batch', 'POST'],
        ['DELETE', '/api/endusers/batch', 'POST'],
      ] as const) {
        const res = await call(t.app, method, url, auth);
        expect(res.statusCode, `${method} ${url}`).toBe(405);
        expect(res.headers.allow).toBe(allow);
        expect(res.json()).toEqual({ ...CODED, code: 'METHOD_NOT_ALLOWED' });
      }
    });

    it('400 INVALID_URL for paths deeper than /api/endusers/<id>, any method', async () => {
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
        for (const url of ['/api/endusers/a/b', '/api/endusers/a/b/c', '/api/endusers/a/']) {
          const res = await call(t.app, method, url, auth);
          expect(res.statusCode, `${method} ${url}`).toBe(400);
          expect(res.json()).toEqual({ ...CODED, code: 'INVALID_URL' });
        }
      }
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
        const empty = await call(t.app, method, '/api/endusers/', auth);
        expect(empty.statusCode, `${method} /api/endusers/`).toBe(400);
        expect(empty.json().code).toBe('INVALID_URL');
      }
    });
  });

  describe('create', () => {
    it('201 with the full record, normalized', async () => {
      const e = email();
      const res = await post({
        origin: 'manual',
        name: '  Ada Lovelace ',
        email: `  ${e.toUpperCase()}  `,
        phone: ' +1 (415) 555-0199 ',
        tags: ['vip', 'vip', ' beta '],
        channelIdentifiers: { msgapp: '+1 415 555 0199' },
        consent: { msgapp: { status: 'granted', source: 'web form' } },
      });
      expect(res.statusCode).toBe(201);
      const body = res.json();
      expect(body).toEqual({
        _id: expect.stringMatching(/^eu_[0-9A-Za-z]{22}$/),
        name: 'Ada Lovelace',
        email: e,
        phone: '+14155550199',
        tags: ['vip', 'beta'],
        origin: 'manual',
        channelIdentifiers: { msgapp: '+14155550199' },
        consent: { msgapp: { status: 'granted', updatedAt: expect.any(Number), source: 'web form' } },
        createdAt: expect.any(Number),
        lastSeenAt: null,
        updatedAt: body.createdAt,
      });
      const got = await call(t.app, 'GET', `/api/endusers/${body._id}`, auth);
      expect(got.statusCode).toBe(200);
      expect(got.json()).toEqual(body);
      expect(got.headers['cache-control']).toBe('no-store');
    });

    it('absent values: null, [] and {}', async () => {
      const body = await create({ name: 'Only Name' });
      expect(body).toMatchObject({ email: null, phone: null, tags: [], channelIdentifiers: {}, consent: {} });
    });

    it('400 INVALID_BODY for a missing, unknown or mistyped origin', async () => {
      for (const origin of [undefined, 'web', 'MANUAL', 3]) {
        const res = await post({ ...(origin !== undefined ? { origin } : {}), name: 'x' });
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'origin' });
      }
      for (const origin of ['inbound', 'imported', 'manual']) {
        expect((await post({ origin, name: 'x' })).statusCode).toBe(201);
      }
    });

    it('400 INVALID_BODY for unknown fields, wrong types, no identity, bad JSON', async () => {
      const cases: [unknown, string | undefined][] = [
        [{ origin: 'manual', name: 'x', nickname: 'y' }, 'nickname'],
        [{ origin: 'manual', name: 'x', _id: 'eu_1' }, '_id'],
        [{ origin: 'manual', email: 42 }, 'email'],
        [{ origin: 'manual', name: 'x', tags: 'a' }, 'tags'],
        [{ origin: 'manual', name: 'x', tags: [1] }, 'tags.0'],
        [{ origin: 'manual', name: 'x', channelIdentifiers: { other: 'x' } }, 'channelIdentifiers.other'],
        [{ origin: 'manual', name: 'x', consent: { msgapp: { status: 'maybe' } } }, 'consent.msgapp.status'],
        [{ origin: 'manual', name: '' }, 'name'],
        [{ origin: 'manual', name: '   ' }, 'name'],
        [{ origin: 'manual' }, undefined],
        [{ origin: 'manual', tags: ['a'] }, undefined],
        [[], undefined],
      ];
      for (const [body, field] of cases) {
        const res = await post(body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json(), JSON.stringify(body)).toEqual({
          ...CODED,
          code: 'INVALID_BODY',
          ...(field ? { field } : {}),
        });
      }
      const bad = await t.app.inject({
        method: 'POST',
        url: '/api/endusers',
        headers: { ...auth, 'content-type': 'application/json' },
        payload: '{"origin":',
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json()).toEqual({ ...CODED, code: 'INVALID_BODY' });
    });

    it('413 PAYLOAD_TOO_LARGE in the coded envelope for a body over the limit', async () => {
      const res = await post({ origin: 'manual', name: 'x'.repeat(t.ctx.config.bodyLimit + 10) });
      expect(res.statusCode).toBe(413);
      expect(res.json()).toEqual({ ...CODED, code: 'PAYLOAD_TOO_LARGE' });
    });

    it('email: trimmed and lower-cased, no dot or plus stripping; invalid → INVALID_BODY naming email', async () => {
      const base = uniq();
      const a = await create({ email: ` First.Last+Tag.${base}@Example.COM ` });
      expect(a.email).toBe(`first.last+tag.${base}@example.com`);
      const b = await create({ email: `firstlast${base}@example.com` });
      expect(b.email).not.toBe(a.email);
      for (const bad of ['no-at-sign', 'a@b', 'a b@c.com', '@c.com', 'a@', '']) {
        const res = await post({ origin: 'manual', email: bad });
        expect(res.statusCode, bad).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'email' });
      }
    });

    it('phone: E.164 from spaces and punctuation; national needs a default country; invalid → field phone', async () => {
      const p = await create({ phone: '+44 20 7946 0958' });
      expect(p.phone).toBe('+442079460958');
      for (const bad of ['020 7946 0958', '12345', '+1 999 555 0123', 'phone', '+', '']) {
        const res = await post({ origin: 'manual', phone: bad });
        expect(res.statusCode, bad).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'phone' });
      }
      const bad = await post({ origin: 'manual', name: 'x', channelIdentifiers: { msgapp: '123' } });
      expect(bad.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'channelIdentifiers.msgapp' });

      // An organization with a default country reads national numbers in it.
      const gb = await makeOrg(t.ctx, 'paid', 'GB');
      const key = await makeKey(t.ctx, gb.id);
      const res = await call(t.app, 'POST', '/api/endusers', key.auth, { origin: 'manual', phone: '020 7946 0958' });
      expect(res.statusCode).toBe(201);
      expect(res.json().phone).toBe('+442079460958');
      const intl = await call(t.app, 'POST', '/api/endusers', key.auth, { origin: 'manual', phone: '+1 415 555 0100' });
      expect(intl.json().phone).toBe('+14155550100');
      const found = await call(t.app, 'GET', '/api/endusers?phone=020%207946%200958', key.auth);
      expect(found.json().data).toHaveLength(1);
    });

    it('409 DUPLICATE_ENDUSER naming the field and the existing _id, whatever the spelling', async () => {
      const e = email();
      const p = phone();
      const first = await create({ email: e, phone: p });
      const dupEmail = await post({ origin: 'manual', email: `  ${e.toUpperCase()}` });
      expect(dupEmail.statusCode).toBe(409);
      expect(dupEmail.json()).toEqual({ ...CODED, code: 'DUPLICATE_ENDUSER', field: 'email', existingId: first._id });
      const spaced = `${p.slice(0, 2)} ${p.slice(2, 5)} ${p.slice(5)}`;
      const dupPhone = await post({ origin: 'manual', email: email(), phone: spaced });
      expect(dupPhone.statusCode).toBe(409);
      expect(dupPhone.json()).toEqual({ ...CODED, code: 'DUPLICATE_ENDUSER', field: 'phone', existingId: first._id });
      // Nothing half-written: the rejected record's own email is still free.
      const rows = await t.ctx.db
        .selectFrom('end_users')
        .select('id')
        .where('org_id', '=', orgId)
        .where('phone', '=', p)
        .execute();
      expect(rows).toHaveLength(1);
    });
  });

  describe('batch', () => {
    it('partial success, per item in input order, with counts', async () => {
      const existing = await create({ email: email() });
      const e1 = email();
      const p1 = phone();
      const res = await call(t.app, 'POST', '/api/endusers/batch', auth, {
        origin: 'imported',
        endUsers: [
          { name: 'A', email: e1, tags: ['batch-t'] },
          { email: existing.email },
          { email: `  ${e1.toUpperCase()} ` },
          { phone: 'not a phone' },
          { name: 'B', unknown: true },
          { phone: p1 },
          { phone: p1, email: email() },
          {},
          'not an object',
        ],
      });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.created).toBe(2);
      expect(body.failed).toBe(7);
      expect(body.results.map((r: { index: number }) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
      const [r0, r1, r2, r3, r4, r5, r6, r7, r8] = body.results;
      expect(r0).toMatchObject({
        status: 'created',
        endUser: { name: 'A', email: e1, origin: 'imported', tags: ['batch-t'] },
      });
      expect(r1).toEqual({
        index: 1,
        status: 'failed',
        error: expect.any(String),
        code: 'DUPLICATE_ENDUSER',
        field: 'email',
        existingId: existing._id,
      });
      expect(r2).toMatchObject({ status: 'failed', code: 'DUPLICATE_ENDUSER', field: 'email', duplicateOf: 0 });
      expect(r3).toMatchObject({ status: 'failed', code: 'INVALID_BODY', field: 'phone' });
      expect(r4).toMatchObject({ status: 'failed', code: 'INVALID_BODY', field: 'unknown' });
      expect(r5).toMatchObject({ status: 'created', endUser: { phone: p1 } });
      expect(r6).toMatchObject({ status: 'failed', code: 'DUPLICATE_ENDUSER', field: 'phone', duplicateOf: 5 });
      expect(r7).toMatchObject({ status: 'failed', code: 'INVALID_BODY' });
      expect(r8).toMatchObject({ status: 'failed', code: 'INVALID_BODY' });
      // Created records are stored, tags included; failed ones left nothing behind.
      const tagged = await call(t.app, 'GET', '/api/endusers?tag=batch-t', auth);
      expect(tagged.json().data.map((u: { _id: string }) => u._id)).toEqual([r0.endUser._id]);
      const p1Rows = await t.ctx.db
        .selectFrom('end_users')
        .select('id')
        .where('org_id', '=', orgId)
        .where('phone', '=', p1)
        .execute();
      expect(p1Rows).toHaveLength(1);
    });

    it('1,000 items are accepted, 1,001 are INVALID_BODY, origin is required', async () => {
      const items = Array.from({ length: 1000 }, (_, i) => ({
        name: `Bulk ${i}`,
        email: `bulk.${i}.${uniq()}@example.com`,
      }));
      const ok = await call(t.app, 'POST', '/api/endusers/batch', auth, { origin: 'imported', endUsers: items });
      expect(ok.statusCode).toBe(200);
      expect(ok.json().created).toBe(1000);
      const over = await call(t.app, 'POST', '/api/endusers/batch', auth, {
        origin: 'imported',
        endUsers: [...items, { name: 'one too many' }],
      });
      expect(over.statusCode).toBe(400);
      expect(over.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'endUsers' });
      for (const body of [{ endUsers: [{ name: 'x' }] }, { origin: 'web', endUsers: [{ name: 'x' }] }]) {
        const res = await call(t.app, 'POST', '/api/endusers/batch', auth, body);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'origin' });
      }
      const extra = await call(t.app, 'POST', '/api/endusers/batch', auth, { origin: 'manual', endUsers: [], x: 1 });
      expect(extra.statusCode).toBe(400);
    });
  });

  describe('update', () => {
    it('merge patch: omitted stays, null clears, tags replaced, channels merged', async () => {
      const p = phone();
      const u = await create({
        name: 'Before',
        email: email(),
        phone: p,
        tags: ['one', 'two'],
        channelIdentifiers: { msgapp: p },
        consent: { msgapp: { status: 'unknown', updatedAt: 5, source: 'import' } },
      });
      const res = await call(t.app, 'PATCH', `/api/endusers/${u._id}`, auth, {
        name: 'After',
        email: null,
        tags: ['three'],
        consent: { msgapp: { status: 'granted' } },
      });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({
        _id: u._id,
        name: 'After',
        email: null,
        phone: p,
        tags: ['three'],
        origin: 'manual',
        channelIdentifiers: { msgapp: p },
        consent: { msgapp: { status: 'granted', source: 'api' } },
        createdAt: u.createdAt,
      });
      expect(body.updatedAt).toBeGreaterThanOrEqual(u.updatedAt);
      expect((await call(t.app, 'GET', '/api/endusers?tag=one', auth)).json().data).toEqual([]);
      expect((await call(t.app, 'GET', '/api/endusers?tag=three', auth)).json().data[0]._id).toBe(u._id);
      const cleared = await call(t.app, 'PATCH', `/api/endusers/${u._id}`, auth, {
        channelIdentifiers: { msgapp: null },
        tags: null,
        consent: null,
      });
      expect(cleared.json()).toMatchObject({ tags: [], channelIdentifiers: {}, consent: {}, name: 'After' });
      const empty = await call(t.app, 'PATCH', `/api/endusers/${u._id}`, auth, {});
      expect(empty.statusCode).toBe(200);
      expect((await call(t.app, 'GET', `/api/endusers/${u._id}`, auth)).json()).toEqual(empty.json());
    });

    it('read-only and unknown fields, invalid values: 400 INVALID_BODY naming the field', async () => {
      const u = await create({ name: 'RO', email: email() });
      for (const [body, field] of [
        [{ _id: 'eu_other' }, '_id'],
        [{ origin: 'inbound' }, 'origin'],
        [{ createdAt: 1 }, 'createdAt'],
        [{ updatedAt: 1 }, 'updatedAt'],
        [{ nickname: 'x' }, 'nickname'],
        [{ email: 'nope' }, 'email'],
        [{ phone: '555' }, 'phone'],
        [{ name: 7 }, 'name'],
      ] as const) {
        const res = await call(t.app, 'PATCH', `/api/endusers/${u._id}`, auth, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field });
      }
      const none = await call(t.app, 'PATCH', `/api/endusers/${u._id}`, auth, { name: null, email: null });
      expect(none.statusCode).toBe(400);
      expect(none.json()).toEqual({ ...CODED, code: 'INVALID_BODY' });
      expect((await call(t.app, 'GET', `/api/endusers/${u._id}`, auth)).json().name).toBe('RO');
    });

    it('a duplicate email or phone is 400 UPDATE_FAILED; unknown ID is 404', async () => {
      const a = await create({ email: email(), phone: phone() });
      const b = await create({ email: email() });
      const dupEmail = await call(t.app, 'PATCH', `/api/endusers/${b._id}`, auth, { email: a.email.toUpperCase() });
      expect(dupEmail.statusCode).toBe(400);
      expect(dupEmail.json()).toEqual({ ...CODED, code: 'UPDATE_FAILED', field: 'email', existingId: a._id });
      const dupPhone = await call(t.app, 'PATCH', `/api/endusers/${b._id}`, auth, { phone: a.phone });
      expect(dupPhone.json()).toEqual({ ...CODED, code: 'UPDATE_FAILED', field: 'phone', existingId: a._id });
      expect((await call(t.app, 'GET', `/api/endusers/${b._id}`, auth)).json().phone).toBeNull();
      // Re-saving one's own email is no conflict.
      const same = await call(t.app, 'PATCH', `/api/endusers/${a._id}`, auth, { email: a.email });
      expect(same.statusCode).toBe(200);
      const missing = await call(t.app, 'PATCH', '/api/endusers/eu_missing', auth, { name: 'x' });
      expect(missing.statusCode).toBe(404);
      expect(missing.json()).toEqual({ ...CODED, code: 'NOT_FOUND' });
    });
  });

  describe('delete', () => {
    it('hard delete with the _id; the second delete is 404', async () => {
      const u = await create({ email: email(), tags: ['gone'] });
      const res = await call(t.app, 'DELETE', `/api/endusers/${u._id}`, auth);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ _id: u._id, deleted: true });
      const again = await call(t.app, 'DELETE', `/api/endusers/${u._id}`, auth);
      expect(again.statusCode).toBe(404);
      expect(again.json()).toEqual({ ...CODED, code: 'NOT_FOUND' });
      expect((await call(t.app, 'GET', `/api/endusers/${u._id}`, auth)).statusCode).toBe(404);
      const tags = await t.ctx.db.selectFrom('end_user_tags').select('tag').where('end_user_id', '=', u._id).execute();
      expect(tags).toEqual([]);
      // Its email is free again.
      expect((await post({ origin: 'manual', email: u.email })).statusCode).toBe(201);
    });
  });

  describe('list', () => {
    let listAuth: Headers;
    let ids: string[];
    beforeAll(async () => {
      const tenant = await makeTenant(t.ctx);
      listAuth = tenant.orgKey.auth;
      ids = [];
      for (let i = 0; i < 7; i++) {
        const res = await call(t.app, 'POST', '/api/endusers', listAuth, {
          origin: i % 2 === 0 ? 'manual' : 'imported',
          name: i === 3 ? 'Zoë Quinn' : `Person ${i}`,
          email: `list${i}@Example.org`,
          phone: `+1 212 555 01${String(i).padStart(2, '0')}`,
          tags: i < 3 ? ['early'] : ['late'],
        });
        ids.push(res.json()._id);
        // Newest first means by creation time; records made in the same millisecond are ordered
        // by _id instead, so each record gets a millisecond of its own.
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    });

    it('newest first with keyset cursors; default limit 50', async () => {
      const all = await call(t.app, 'GET', '/api/endusers', listAuth);
      expect(all.json()).toEqual({ data: expect.any(Array), nextCursor: null });
      expect(all.json().data.map((u: { _id: string }) => u._id)).toEqual([...ids].reverse());
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await call(
          t.app,
          'GET',
          `/api/endusers?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          listAuth,
        );
        expect(res.statusCode).toBe(200);
        const page = res.json();
        expect(page.data.length).toBeLessThanOrEqual(3);
        seen.push(...page.data.map((u: { _id: string }) => u._id));
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen).toEqual([...ids].reverse());
    });

    it('filters: origin, tag, email, phone, q, updatedSince', async () => {
      const q = async (query: string) =>
        (await call(t.app, 'GET', `/api/endusers?${query}`, listAuth)).json().data.map((u: { _id: string }) => u._id);
      const rev = [...ids].reverse();
      expect(await q('origin=imported')).toEqual(rev.filter((id) => ids.indexOf(id) % 2 === 1));
      expect(await q('tag=early')).toEqual(rev.filter((id) => ids.indexOf(id) < 3));
      expect(await q('email=%20LIST4@example.ORG')).toEqual([ids[4]]);
      expect(await q('phone=%2B1%20(212)%20555-0105')).toEqual([ids[5]]);
      expect(await q('q=zo')).toEqual([ids[3]]);
      expect(await q('q=ZOË')).toEqual([ids[3]]);
      expect(await q('q=list6')).toEqual([ids[6]]);
      expect(await q('q=%2B1212555010')).toHaveLength(7);
      expect(await q('q=per&origin=manual&tag=late')).toEqual([ids[6], ids[4]]);
      expect(await q('q=100%25')).toEqual([]);
      expect(await q('q=_')).toEqual([]);
      expect(await q(`updatedSince=${Date.now() + 60_000}`)).toEqual([]);
      expect(await q('updatedSince=0')).toHaveLength(7);
    });

    it('bad query values: 400 INVALID_ORIGIN for origin, INVALID_BODY for the rest', async () => {
      for (const origin of ['web', 'MANUAL', '']) {
        const res = await call(t.app, 'GET', `/api/endusers?origin=${origin}`, listAuth);
        expect(res.statusCode, origin).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_ORIGIN', field: 'origin' });
      }
      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=201', 'limit'],
        ['limit=ten', 'limit'],
        ['cursor=garbage', 'cursor'],
        [`cursor=${Buffer.from('[1]').toString('base64url')}`, 'cursor'],
        ['email=nope', 'email'],
        ['phone=12', 'phone'],
        ['updatedSince=yesterday', 'updatedSince'],
        ['q=', 'q'],
        ['sort=name', 'sort'],
      ] as const) {
        const res = await call(t.app, 'GET', `/api/endusers?${query}`, listAuth);
        expect(res.statusCode, query).toBe(400);
        expect(res.json(), query).toEqual({ ...CODED, code: 'INVALID_BODY', field });
      }
      expect((await call(t.app, 'GET', '/api/endusers?limit=200', listAuth)).statusCode).toBe(200);
    });

    it('a walk stays exact while records are inserted concurrently', async () => {
      const tenant = await makeTenant(t.ctx);
      const h = tenant.orgKey.auth;
      const items = Array.from({ length: 120 }, (_, i) => ({ name: `Walk ${i}` }));
      const seeded = await call(t.app, 'POST', '/api/endusers/batch', h, { origin: 'manual', endUsers: items });
      const before = new Set<string>(seeded.json().results.map((r: { endUser: { _id: string } }) => r.endUser._id));
      const seen: string[] = [];
      let cursor: string | null = null;
      let page = 0;
      do {
        const [res]: [Awaited<ReturnType<typeof call>>, unknown] = await Promise.all([
          call(t.app, 'GET', `/api/endusers?limit=7${cursor ? `&cursor=${cursor}` : ''}`, h),
          call(t.app, 'POST', '/api/endusers', h, { origin: 'manual', name: `Late ${page}` }),
        ]);
        page++;
        seen.push(...res.json().data.map((u: { _id: string }) => u._id));
        cursor = res.json().nextCursor;
      } while (cursor);
      expect(new Set(seen).size).toBe(seen.length);
      for (const id of before) expect(seen).toContain(id);
    });
  });

  describe('recordInboundEndUser', () => {
    it('creates once, then moves lastSeenAt forward and fills the name only when empty', async () => {
      const org = await makeOrg(t.ctx);
      const p = phone();
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          recordInboundEndUser(t.ctx.db, t.ctx.clock, { orgId: org.id, phone: p, name: 'Profile', at: 1000 + i }),
        ),
      );
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.id)).size).toBe(1);
      const id = results[0]?.id ?? '';
      const key = await makeKey(t.ctx, org.id);
      const got = (await call(t.app, 'GET', `/api/endusers/${id}`, key.auth)).json();
      expect(got).toMatchObject({
        name: 'Profile',
        phone: p,
        origin: 'inbound',
        channelIdentifiers: { msgapp: p },
        lastSeenAt: 1009,
      });

      await call(t.app, 'PATCH', `/api/endusers/${id}`, key.auth, { name: 'Chosen', channelIdentifiers: null });
      const again = await recordInboundEndUser(t.ctx.db, t.ctx.clock, {
        orgId: org.id,
        phone: p,
        name: 'Other',
        at: 500,
      });
      expect(again).toEqual({ id, created: false });
      const after = (await call(t.app, 'GET', `/api/endusers/${id}`, key.auth)).json();
      expect(after).toMatchObject({ name: 'Chosen', lastSeenAt: 1009, channelIdentifiers: { msgapp: p } });
      await recordInboundEndUser(t.ctx.db, t.ctx.clock, { orgId: org.id, phone: p, at: 5000 });
      expect((await call(t.app, 'GET', `/api/endusers/${id}`, key.auth)).json().lastSeenAt).toBe(5000);
    });
  });

  it('the OpenAPI document describes every end-user route with its errors', async () => {
    const ops = listOperations(t.app).filter((op) => op.path.startsWith('/api/endusers'));
    expect(ops.map((op) => `${op.method} ${op.path}`).sort()).toEqual([
      'DELETE /api/endusers/{endUserId}',
      'GET /api/endusers',
      'GET /api/endusers/{endUserId}',
      'PATCH /api/endusers/{endUserId}',
      'POST /api/endusers',
      'POST /api/endusers/batch',
    ]);
    for (const op of ops) {
      expect(op.secured).toBe(true);
      expect(op.statuses).toEqual(expect.arrayContaining(['400', '401', '403']));
    }
  });
});
