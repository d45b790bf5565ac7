import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { recordInboundEndUser } from '../../src/end-users/end-user.service.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { documentedResponseViolation, listOperations, openApiDocument } from '../helpers/contract.js';
import { makeAgent, makeCampaign, makeKey, makeOrg, makeTenant } from '../helpers/factories.js';

type Headers = Record<string, string>;

/**
 * Every response, whatever its status, is checked against /api/openapi.json as it goes by: 405 and
 * INVALID_URL answers included (against the documented operations of their path).
 */
async function send(app: FastifyInstance, options: InjectOptions & { method: string; url: string }) {
  const res = await app.inject(options);
  const violation = documentedResponseViolation(app, options.method, options.url, res);
  if (violation) throw new Error(violation);
  return res;
}

async function call(app: FastifyInstance, method: string, url: string, headers: Headers, payload?: unknown) {
  return send(app, {
    method: method as InjectOptions['method'] & string,
    url,
    headers,
    ...(payload !== undefined ? { payload: payload as InjectOptions['payload'] } : {}),
  });
}

type Res = LightMyRequestResponse;
const idsOf = (res: Res) => res.json().data.map((u: { _id: string }) => u._id);

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
    const COLLECTION = 'GET, HEAD, POST';
    const BY_ID = 'GET, HEAD, PATCH, DELETE';
    it('405 METHOD_NOT_ALLOWED with Allow, for every method the path does not support', async () => {
      for (const [method, url, allow] of [
        ['PUT', '/api/endusers/x', BY_ID],
        ['POST', '/api/endusers/x', BY_ID],
        ['OPTIONS', '/api/endusers/x', BY_ID],
        ['TRACE', '/api/endusers/x', BY_ID],
        ['PROPFIND', '/api/endusers/x', BY_ID],
        ['DELETE', '/api/endusers', COLLECTION],
        ['PUT', '/api/endusers', COLLECTION],
        ['PATCH', '/api/endusers', COLLECTION],
        ['OPTIONS', '/api/endusers', COLLECTION],
        ['TRACE', '/api/endusers', COLLECTION],
        ['PROPFIND', '/api/endusers', COLLECTION],
        ['QUERY', '/api/endusers', COLLECTION],
        ['MKCOL', '/api/endusers', COLLECTION],
        ['GET', '/api/endusers/batch', 'POST'],
        ['DELETE', '/api/endusers/batch', 'POST'],
        ['PATCH', '/api/endusers/batch', 'POST'],
        ['OPTIONS', '/api/endusers/batch', 'POST'],
        ['LOCK', '/api/endusers/batch', 'POST'],
      ] as const) {
        // Without a key: the answer comes from the method and path alone.
        for (const headers of [auth, {}]) {
          const res = await call(t.app, method, url, headers);
          expect(res.statusCode, `${method} ${url}`).toBe(405);
          expect(res.headers.allow, `${method} ${url}`).toBe(allow);
          expect(res.json()).toEqual({ ...CODED, code: 'METHOD_NOT_ALLOWED' });
        }
      }
      const head = await call(t.app, 'HEAD', '/api/endusers/batch', {});
      expect(head.statusCode).toBe(405);
      expect(head.headers.allow).toBe('POST');
      expect(head.body).toBe('');
    });

    it('405 is decided before the body is read: a malformed or oversized body does not change it', async () => {
      for (const [method, url, allow] of [
        ['PUT', '/api/endusers', COLLECTION],
        ['PUT', '/api/endusers/eu_x', BY_ID],
        ['DELETE', '/api/endusers/batch', 'POST'],
      ] as const) {
        for (const payload of ['{"origin":', 'x'.repeat(t.ctx.config.bodyLimit + 10)]) {
          const res = await send(t.app, {
            method,
            url,
            headers: { ...auth, 'content-type': 'application/json' },
            payload,
          });
          expect(res.statusCode, `${method} ${url}`).toBe(405);
          expect(res.headers.allow).toBe(allow);
          expect(res.json().code).toBe('METHOD_NOT_ALLOWED');
        }
      }
    });

    it('HEAD works where Allow lists it: the GET answer without a body', async () => {
      const u = await create({ name: 'Head' });
      const list = await call(t.app, 'HEAD', '/api/endusers', auth);
      expect(list.statusCode).toBe(200);
      expect(list.headers['content-type']).toMatch(/application\/json/);
      expect(list.body).toBe('');
      const one = await call(t.app, 'HEAD', `/api/endusers/${u._id}`, auth);
      expect(one.statusCode).toBe(200);
      expect(one.body).toBe('');
      expect((await call(t.app, 'HEAD', '/api/endusers/eu_missing', auth)).statusCode).toBe(404);
      expect((await call(t.app, 'HEAD', '/api/endusers', {})).statusCode).toBe(401);
    });

    it('400 INVALID_URL for paths deeper than /api/endusers/<id> or with an empty ID, any method, before the key', async () => {
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'HEAD']) {
        for (const url of [
          '/api/endusers/a/b',
          '/api/endusers/a/b/c',
          '/api/endusers/a/',
          '/api/endusers/batch/x',
          '/api/endusers/',
          '/api/endusers//x',
        ]) {
          for (const headers of [auth, {}]) {
            const res = await call(t.app, method, url, headers);
            expect(res.statusCode, `${method} ${url}`).toBe(400);
            if (method !== 'HEAD') expect(res.json()).toEqual({ ...CODED, code: 'INVALID_URL' });
          }
        }
      }
      // A body is not even read.
      const res = await send(t.app, {
        method: 'POST',
        url: '/api/endusers/a/b',
        headers: { ...auth, 'content-type': 'application/json' },
        payload: '{"broken',
      });
      expect(res.json().code).toBe('INVALID_URL');
    });

    it('an ID no record can have (over 64 characters, or outside the ID alphabet) is 404 NOT_FOUND', async () => {
      const u = await create({ name: 'Keep me' });
      for (const id of ['e'.repeat(65), `${u._id}${'x'.repeat(60)}`, 'eu_a.b', 'eu_%C3%A9', "eu_'x", 'eu_a%20b']) {
        for (const [method, body] of [
          ['GET', undefined],
          ['PATCH', { name: 'x' }],
          ['DELETE', undefined],
        ] as const) {
          const res = await call(t.app, method, `/api/endusers/${id}`, auth, body);
          expect(res.statusCode, `${method} ${id}`).toBe(404);
          expect(res.json()).toEqual({ ...CODED, code: 'NOT_FOUND' });
        }
      }
      // Still authenticated first.
      expect((await call(t.app, 'GET', `/api/endusers/${'e'.repeat(65)}`, {})).statusCode).toBe(401);
      expect((await call(t.app, 'GET', `/api/endusers/${u._id}`, auth)).json().name).toBe('Keep me');
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
        attributes: {},
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
      const bad = await send(t.app, {
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

  describe('create: loose input is refused or cleaned, never silently changed', () => {
    const stored = (id: string) =>
      t.ctx.db.selectFrom('end_users').select(['name', 'tags']).where('id', '=', id).executeTakeFirst();

    it('a name without a visible character is blank; limits apply after trimming', async () => {
      for (const name of ['\u200b', '\u200b\u200d\u2060 ', ' \u00ad\ufeff ', '\u3164']) {
        const res = await post({ origin: 'manual', name, email: email() });
        expect(res.statusCode, JSON.stringify(name)).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'name' });
      }
      const padded = await create({ name: `  ${'N'.repeat(200)}  ` });
      expect(padded.name).toBe('N'.repeat(200));
      const long = await post({ origin: 'manual', name: `N${'n'.repeat(200)}` });
      expect(long.statusCode).toBe(400);
      expect(long.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'name' });
      // Invisible characters inside a visible name are kept as written.
      const joined = await create({ name: 'Ada\u200bLovelace' });
      expect((await stored(joined._id))?.name).toBe('Ada\u200bLovelace');
    });

    it('tags: trimmed first, then 1 to 64 characters; invisible-only tags are blank', async () => {
      const tag = 't'.repeat(64);
      const ok = await create({ name: 'Tagged', tags: [` ${tag}`, `${tag}\t`, ' x '] });
      expect(ok.tags).toEqual([tag, 'x']);
      expect(JSON.parse((await stored(ok._id))?.tags ?? '')).toEqual([tag, 'x']);
      for (const [tags, field] of [
        [['ok', ` ${'t'.repeat(65)} `], 'tags.1'],
        [['\u200b'], 'tags.0'],
        [[' '], 'tags.0'],
      ] as const) {
        const res = await post({ origin: 'manual', name: 'x', tags });
        expect(res.statusCode, JSON.stringify(tags)).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field });
      }
    });

    it('a phone with an extension or any text around it is refused, not truncated', async () => {
      for (const [body, field] of [
        [{ phone: '+1-415-555-2671 ext. 12' }, 'phone'],
        [{ phone: '+1 415 555 2671 x12' }, 'phone'],
        [{ phone: '+14155552671;ext=1' }, 'phone'],
        [{ phone: '+447400123456abc' }, 'phone'],
        [{ phone: 'call +14155552671' }, 'phone'],
        [{ name: 'x', channelIdentifiers: { msgapp: '+447400123456 ext 2' } }, 'channelIdentifiers.msgapp'],
      ] as const) {
        const res = await post({ origin: 'manual', ...body });
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field });
        expect(res.json().error).toMatch(/no extension or other text/);
      }
      const rows = await t.ctx.db
        .selectFrom('end_users')
        .select('id')
        .where('org_id', '=', orgId)
        .where('phone', 'in', ['+14155552671', '+447400123456'])
        .execute();
      expect(rows).toEqual([]);
      // Punctuation a person writes is still fine.
      expect((await create({ phone: '+44 (0) 7400 123-456' })).phone).toBe('+447400123456');
    });

    it('consent.msgapp.updatedAt is an integer from 0 to 2^53 - 1', async () => {
      for (const updatedAt of [1e20, 2 ** 53, -1, 1.5]) {
        const res = await post({ origin: 'manual', name: 'c', consent: { msgapp: { status: 'granted', updatedAt } } });
        expect(res.statusCode, String(updatedAt)).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'consent.msgapp.updatedAt' });
      }
      const max = await create({
        name: 'c',
        consent: { msgapp: { status: 'granted', updatedAt: Number.MAX_SAFE_INTEGER } },
      });
      expect(max.consent.msgapp.updatedAt).toBe(Number.MAX_SAFE_INTEGER);
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

    it('only a created item claims its email or phone: a later item sharing it with a failed one is tried on its own', async () => {
      const stored = await create({ email: email(), phone: phone() });
      const other = await create({ phone: phone() });
      const shared = phone();
      const freshEmail = email();
      const res = await call(t.app, 'POST', '/api/endusers/batch', auth, {
        origin: 'imported',
        endUsers: [
          { email: stored.email, phone: shared }, // fails: the email is stored
          { email: freshEmail, phone: shared }, // created: the phone is free after all
          { phone: shared }, // fails: item 1 was created with it
          { email: freshEmail.toUpperCase(), phone: other.phone }, // fails: the phone is stored
          { email: freshEmail }, // fails: item 1 has it
          { name: 'Bad', phone: '12' }, // invalid
          { email: email(), phone: '12' }, // invalid: claims nothing
        ],
      });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.created).toBe(1);
      const [r0, r1, r2, r3, r4, r5, r6] = body.results;
      expect(r0).toEqual({
        index: 0,
        status: 'failed',
        error: expect.any(String),
        code: 'DUPLICATE_ENDUSER',
        field: 'email',
        existingId: stored._id,
      });
      expect(r1).toMatchObject({ status: 'created', endUser: { email: freshEmail, phone: shared } });
      expect(r2).toEqual({
        index: 2,
        status: 'failed',
        error: 'Item 1 of this batch has the same phone.',
        code: 'DUPLICATE_ENDUSER',
        field: 'phone',
        duplicateOf: 1,
      });
      expect(r3).toMatchObject({ code: 'DUPLICATE_ENDUSER', field: 'phone', existingId: other._id });
      expect(r4).toMatchObject({ code: 'DUPLICATE_ENDUSER', field: 'email', duplicateOf: 1 });
      expect(r5).toMatchObject({ code: 'INVALID_BODY', field: 'phone' });
      expect(r6).toMatchObject({ code: 'INVALID_BODY', field: 'phone' });
      const holders = await t.ctx.db
        .selectFrom('end_users')
        .select(['id', 'email'])
        .where('org_id', '=', orgId)
        .where('phone', '=', shared)
        .execute();
      expect(holders).toEqual([{ id: r1.endUser._id, email: freshEmail }]);
    });

    it('first occurrence wins among items that succeed, whatever the order of failures', async () => {
      const held = await create({ email: email() });
      const p = phone();
      const e = email();
      const res = await call(t.app, 'POST', '/api/endusers/batch', auth, {
        origin: 'manual',
        endUsers: [{ email: held.email, phone: p }, { phone: p, email: e }, { phone: p }, { email: e, phone: phone() }],
      });
      const results = res.json().results;
      expect(results.map((r: { status: string; duplicateOf?: number }) => r.duplicateOf ?? r.status)).toEqual([
        'failed',
        'created',
        1,
        1,
      ]);
    });

    it('items of a batch share createdAt and are listed later items first; their IDs increase with the position', async () => {
      const tenant = await makeTenant(t.ctx);
      const h = tenant.orgKey.auth;
      const items = Array.from({ length: 12 }, (_, i) => ({ name: `Order ${i}`, tags: ['order'] }));
      const res = await call(t.app, 'POST', '/api/endusers/batch', h, { origin: 'manual', endUsers: items });
      const created: { _id: string; createdAt: number }[] = res
        .json()
        .results.map((r: { endUser: { _id: string; createdAt: number } }) => r.endUser);
      expect(new Set(created.map((u) => u.createdAt)).size).toBe(1);
      expect([...created.map((u) => u._id)].sort()).toEqual(created.map((u) => u._id));
      for (const u of created) expect(u._id).toMatch(/^eu_[0-9A-Za-z]{22}$/);
      const listed = await call(t.app, 'GET', '/api/endusers?tag=order&limit=5', h);
      expect(listed.json().data.map((u: { name: string }) => u.name)).toEqual([
        'Order 11',
        'Order 10',
        'Order 9',
        'Order 8',
        'Order 7',
      ]);
      const rest = await call(t.app, 'GET', `/api/endusers?tag=order&cursor=${listed.json().nextCursor}`, h);
      expect(rest.json().data.map((u: { name: string }) => u.name)).toEqual(
        [6, 5, 4, 3, 2, 1, 0].map((i) => `Order ${i}`),
      );
    });

    it('a batch within every per-item limit can still be over the body limit: 413, nothing created; smaller batches pass', async () => {
      const tag = `big-${uniq()}`;
      const items = Array.from({ length: 1000 }, (_, i) => ({
        name: `${'N'.repeat(190)} ${i}`,
        email: `big.${i}.${uniq()}@example.com`,
        tags: [tag, ...Array.from({ length: 12 }, (_, k) => `${k}`.padEnd(64, 't'))],
      }));
      const whole = JSON.stringify({ origin: 'imported', endUsers: items });
      expect(whole.length).toBeGreaterThan(t.ctx.config.bodyLimit);
      const res = await send(t.app, {
        method: 'POST',
        url: '/api/endusers/batch',
        headers: { ...auth, 'content-type': 'application/json' },
        payload: whole,
      });
      expect(res.statusCode).toBe(413);
      expect(res.json()).toEqual({ ...CODED, code: 'PAYLOAD_TOO_LARGE' });
      const count = async () =>
        Number(
          (
            await t.ctx.db
              .selectFrom('end_user_tags')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('org_id', '=', orgId)
              .where('tag', '=', tag)
              .executeTakeFirst()
          )?.n,
        );
      expect(await count()).toBe(0);
      for (const half of [items.slice(0, 500), items.slice(500)]) {
        const ok = await call(t.app, 'POST', '/api/endusers/batch', auth, { origin: 'imported', endUsers: half });
        expect(ok.statusCode).toBe(200);
        expect(ok.json().created).toBe(500);
      }
      expect(await count()).toBe(1000);
    });
  });

  describe('writes the database refuses (a rule of the database, here a trigger)', () => {
    const refuse = async () => {
      if (dialect === 'postgres') {
        await sql`CREATE FUNCTION eu_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            IF TG_OP = 'DELETE' THEN
              IF OLD.name = 'Undeletable' THEN RAISE EXCEPTION 'refused by a rule of this database'; END IF;
              RETURN OLD;
            END IF;
            IF NEW.name = 'Refused' THEN RAISE EXCEPTION 'refused by a rule of this database'; END IF;
            RETURN NEW;
          END $$`.execute(t.ctx.db);
        await sql`CREATE TRIGGER eu_refuse BEFORE INSERT OR UPDATE OR DELETE ON end_users
          FOR EACH ROW EXECUTE FUNCTION eu_refuse()`.execute(t.ctx.db);
      } else {
        for (const [event, row] of [
          ['INSERT', 'NEW'],
          ['UPDATE', 'NEW'],
        ] as const) {
          await sql
            .raw(`CREATE TRIGGER eu_refuse_${event.toLowerCase()} BEFORE ${event} ON end_users
              WHEN ${row}.name = 'Refused' BEGIN SELECT RAISE(ABORT, 'refused by a rule of this database'); END`)
            .execute(t.ctx.db);
        }
        await sql`CREATE TRIGGER eu_refuse_delete BEFORE DELETE ON end_users
          WHEN OLD.name = 'Undeletable' BEGIN SELECT RAISE(ABORT, 'refused by a rule of this database'); END`.execute(
          t.ctx.db,
        );
      }
    };
    const allow = async () => {
      if (dialect === 'postgres') {
        await sql`DROP TRIGGER eu_refuse ON end_users`.execute(t.ctx.db);
        await sql`DROP FUNCTION eu_refuse()`.execute(t.ctx.db);
      } else {
        for (const name of ['eu_refuse_insert', 'eu_refuse_update', 'eu_refuse_delete']) {
          await sql.raw(`DROP TRIGGER ${name}`).execute(t.ctx.db);
        }
      }
    };

    it('create: 400 CREATE_FAILED; batch: only the refused items fail, CREATE_FAILED; others are created', async () => {
      const e = email();
      const tag = `refusal-${uniq()}`;
      await refuse();
      try {
        const one = await post({ origin: 'manual', name: 'Refused', email: e, tags: [tag] });
        expect(one.statusCode).toBe(400);
        expect(one.json()).toEqual({ ...CODED, code: 'CREATE_FAILED' });
        expect(one.body).not.toMatch(/refused by a rule|sqlite|trigger/i);
        const batch = await call(t.app, 'POST', '/api/endusers/batch', auth, {
          origin: 'imported',
          endUsers: [
            { name: 'Refused', email: e, tags: [tag] },
            { name: 'Fine', tags: [tag] },
            { name: 'Also fine', email: e, tags: [tag] },
            { name: 'Refused', tags: [tag] },
          ],
        });
        expect(batch.statusCode).toBe(200);
        const [r0, r1, r2, r3] = batch.json().results;
        expect(r0).toEqual({ index: 0, status: 'failed', code: 'CREATE_FAILED', error: expect.any(String) });
        expect(r1).toMatchObject({ status: 'created', endUser: { name: 'Fine' } });
        // Item 0 failed, so the email went to item 2.
        expect(r2).toMatchObject({ status: 'created', endUser: { name: 'Also fine', email: e } });
        expect(r3).toMatchObject({ status: 'failed', code: 'CREATE_FAILED' });
        expect(batch.json()).toMatchObject({ created: 2, failed: 2 });
      } finally {
        await allow();
      }
      const stored = await t.ctx.db
        .selectFrom('end_users')
        .select('name')
        .where('org_id', '=', orgId)
        .where('id', 'in', (eb) => eb.selectFrom('end_user_tags').select('end_user_id').where('tag', '=', tag))
        .orderBy('name')
        .execute();
      expect(stored.map((r) => r.name)).toEqual(['Also fine', 'Fine']);
    });

    it('update: 400 UPDATE_FAILED, unchanged; delete: 400 DELETE_FAILED, still there', async () => {
      const u = await create({ name: 'Before' });
      const keep = await create({ name: 'Undeletable' });
      await refuse();
      try {
        const patched = await call(t.app, 'PATCH', `/api/endusers/${u._id}`, auth, { name: 'Refused' });
        expect(patched.statusCode).toBe(400);
        expect(patched.json()).toEqual({ ...CODED, code: 'UPDATE_FAILED' });
        const deleted = await call(t.app, 'DELETE', `/api/endusers/${keep._id}`, auth);
        expect(deleted.statusCode).toBe(400);
        expect(deleted.json()).toEqual({ ...CODED, code: 'DELETE_FAILED' });
      } finally {
        await allow();
      }
      expect((await call(t.app, 'GET', `/api/endusers/${u._id}`, auth)).json().name).toBe('Before');
      expect((await call(t.app, 'GET', `/api/endusers/${keep._id}`, auth)).statusCode).toBe(200);
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

    it('accepts application/merge-patch+json (the media type of a JSON merge patch); other routes do not', async () => {
      const u = await create({ name: 'Merge', email: email(), tags: ['a'] });
      const res = await send(t.app, {
        method: 'PATCH',
        url: `/api/endusers/${u._id}`,
        headers: { ...auth, 'content-type': 'application/merge-patch+json' },
        payload: JSON.stringify({ email: null, tags: ['b'] }),
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ name: 'Merge', email: null, tags: ['b'] });
      expect((await call(t.app, 'GET', `/api/endusers/${u._id}`, auth)).json()).toEqual(res.json());
      for (const [payload, field] of [
        ['{"name":', undefined],
        ['{"origin":"manual"}', 'origin'],
        ['{"name":"a\\u0000b"}', 'name'],
      ] as const) {
        const bad = await send(t.app, {
          method: 'PATCH',
          url: `/api/endusers/${u._id}`,
          headers: { ...auth, 'content-type': 'application/merge-patch+json; charset=utf-8' },
          payload,
        });
        expect(bad.statusCode, payload).toBe(400);
        expect(bad.json()).toEqual({ ...CODED, code: 'INVALID_BODY', ...(field ? { field } : {}) });
      }
      const post = await send(t.app, {
        method: 'POST',
        url: '/api/endusers',
        headers: { ...auth, 'content-type': 'application/merge-patch+json' },
        payload: JSON.stringify({ origin: 'manual', name: 'Nope' }),
      });
      expect(post.statusCode).toBe(400);
      expect(post.json()).toEqual({ ...CODED, code: 'INVALID_BODY' });
    });

    it('a name patched to one without a visible character is blank; the search key follows the name', async () => {
      const u = await create({ name: 'Émile Before', email: email() });
      const blank = await call(t.app, 'PATCH', `/api/endusers/${u._id}`, auth, { name: '\u200b' });
      expect(blank.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'name' });
      await call(t.app, 'PATCH', `/api/endusers/${u._id}`, auth, { name: 'ŒUVRE Après' });
      const row = await t.ctx.db
        .selectFrom('end_users')
        .select(['name', 'name_search'])
        .where('id', '=', u._id)
        .executeTakeFirst();
      expect(row).toEqual({ name: 'ŒUVRE Après', name_search: 'œuvre après' });
      await call(t.app, 'PATCH', `/api/endusers/${u._id}`, auth, { name: null });
      expect(
        await t.ctx.db
          .selectFrom('end_users')
          .select(['name', 'name_search'])
          .where('id', '=', u._id)
          .executeTakeFirst(),
      ).toEqual({ name: null, name_search: null });
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

    it('integers: decimal digits only, 0 to 2^53 - 1; the parameter is named', async () => {
      for (const [query, field] of [
        ['updatedSince=99999999999999999999', 'updatedSince'],
        ['updatedSince=9007199254740992', 'updatedSince'],
        ['updatedSince=1e300', 'updatedSince'],
        ['updatedSince=1e1', 'updatedSince'],
        ['updatedSince=0x10', 'updatedSince'],
        ['updatedSince=%2010', 'updatedSince'],
        ['updatedSince=10%20', 'updatedSince'],
        ['updatedSince=-1', 'updatedSince'],
        ['updatedSince=%2B5', 'updatedSince'],
        ['updatedSince=1.0', 'updatedSince'],
        ['updatedSince=', 'updatedSince'],
        ['limit=1e1', 'limit'],
        ['limit=0x10', 'limit'],
        ['limit=%2010', 'limit'],
        ['limit=10%20', 'limit'],
        ['limit=99999999999999999999', 'limit'],
        ['limit=', 'limit'],
      ] as const) {
        const res = await call(t.app, 'GET', `/api/endusers?${query}`, listAuth);
        expect(res.statusCode, query).toBe(400);
        expect(res.json(), query).toEqual({ ...CODED, code: 'INVALID_BODY', field });
      }
      expect(idsOf(await call(t.app, 'GET', '/api/endusers?updatedSince=9007199254740991', listAuth))).toEqual([]);
      expect(idsOf(await call(t.app, 'GET', '/api/endusers?updatedSince=0000&limit=007', listAuth))).toHaveLength(7);
    });

    it('cursors: only what the API returned; a hand-made or altered one is 400 INVALID_BODY naming cursor', async () => {
      const page = (await call(t.app, 'GET', '/api/endusers?limit=2', listAuth)).json();
      const real: string = page.nextCursor;
      const [createdAt, id] = JSON.parse(Buffer.from(real, 'base64url').toString()) as [number, string];
      const made = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
      for (const cursor of [
        made([-1, 'x']),
        made([-1, id]),
        made([createdAt, 'x']),
        made([createdAt, `${id}x`]),
        made([1e20, id]),
        made([createdAt + 0.5, id]),
        made([String(createdAt), id]),
        made([createdAt, id, 1]),
        made({ createdAt, id }),
        `${real}=`,
        Buffer.from(` ${JSON.stringify([createdAt, id])}`).toString('base64url'),
        Buffer.from(JSON.stringify([createdAt, id])).toString('base64'),
      ]) {
        const res = await call(t.app, 'GET', `/api/endusers?cursor=${encodeURIComponent(cursor)}`, listAuth);
        expect(res.statusCode, cursor).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'cursor' });
      }
      const next = await call(t.app, 'GET', `/api/endusers?limit=2&cursor=${real}`, listAuth);
      expect(idsOf(next)).toEqual([...ids].reverse().slice(2, 4));
    });

    it('tag: blank or empty is 400 either way; a repeated origin is INVALID_ORIGIN', async () => {
      for (const query of ['tag=', 'tag=%20', 'tag=%E2%80%8B', 'tag=%09']) {
        const res = await call(t.app, 'GET', `/api/endusers?${query}`, listAuth);
        expect(res.statusCode, query).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_BODY', field: 'tag' });
      }
      expect(idsOf(await call(t.app, 'GET', '/api/endusers?tag=%20early%20', listAuth))).toHaveLength(3);
      for (const query of ['origin=manual&origin=manual', 'origin=manual&origin=web', 'origin=&origin=']) {
        const res = await call(t.app, 'GET', `/api/endusers?${query}`, listAuth);
        expect(res.statusCode, query).toBe(400);
        expect(res.json()).toEqual({ ...CODED, code: 'INVALID_ORIGIN', field: 'origin' });
      }
    });

    it('q matches non-ASCII names in any case, the same on every database', async () => {
      const tenant = await makeTenant(t.ctx);
      const h = tenant.orgKey.auth;
      const names = [
        'ÉMILE Zola',
        'émile Du Châtelet',
        'ØRSTED Hans',
        'ΣΩΚΡΆΤΗΣ',
        'İlkay',
        'Ｚｏｅ Wide',
        'E\u0301douard Manet',
      ];
      const made: Record<string, string> = {};
      for (const name of names)
        made[name] = (await call(t.app, 'POST', '/api/endusers', h, { origin: 'manual', name })).json()._id;
      const q = async (text: string) =>
        idsOf(await call(t.app, 'GET', `/api/endusers?q=${encodeURIComponent(text)}`, h)).sort();
      const idsFor = (...list: string[]) => list.map((n) => made[n]).sort();
      expect(await q('émile')).toEqual(idsFor('ÉMILE Zola', 'émile Du Châtelet'));
      expect(await q('ÉMILE ')).toEqual(idsFor('ÉMILE Zola', 'émile Du Châtelet'));
      expect(await q('émile z')).toEqual(idsFor('ÉMILE Zola'));
      expect(await q('ørs')).toEqual(idsFor('ØRSTED Hans'));
      expect(await q('σωκ')).toEqual(idsFor('ΣΩΚΡΆΤΗΣ'));
      expect(await q('ΣΩΚΡΆ')).toEqual(idsFor('ΣΩΚΡΆΤΗΣ'));
      expect(await q('zoe')).toEqual(idsFor('Ｚｏｅ Wide'));
      expect(await q('Ｚｏ')).toEqual(idsFor('Ｚｏｅ Wide'));
      // Composed and decomposed spellings of é find each other.
      expect(await q('édou')).toEqual(idsFor('E\u0301douard Manet'));
      expect(await q('e\u0301mile')).toEqual(idsFor('ÉMILE Zola', 'émile Du Châtelet'));
      expect(await q('emile')).toEqual([]);
      expect(await q('zola')).toEqual([]);
    });

    it('q answers the same whether few or more than 10,000 records match (two plans on SQLite)', async () => {
      const tenant = await makeTenant(t.ctx);
      const h = tenant.orgKey.auth;
      for (let b = 0; b < 11; b++) {
        const endUsers = Array.from({ length: 1000 }, (_, i) => ({
          name: `Broad ${b * 1000 + i}`,
          ...(i % 250 === 0 ? { tags: ['broad-tagged'] } : {}),
        }));
        const res = await call(t.app, 'POST', '/api/endusers/batch', h, { origin: 'imported', endUsers });
        expect(res.json().created).toBe(1000);
      }
      await call(t.app, 'POST', '/api/endusers', h, { origin: 'manual', name: 'Other newest' });
      const names = async (query: string) =>
        (await call(t.app, 'GET', `/api/endusers?${query}`, h)).json() as {
          data: { name: string }[];
          nextCursor: string | null;
        };
      const broad = await names('q=BROAD&limit=3');
      expect(broad.data.map((u) => u.name)).toEqual(['Broad 10999', 'Broad 10998', 'Broad 10997']);
      const next = await names(`q=broad&limit=2&cursor=${broad.nextCursor}`);
      expect(next.data.map((u) => u.name)).toEqual(['Broad 10996', 'Broad 10995']);
      expect((await names('q=broad&tag=broad-tagged&limit=200')).data).toHaveLength(44);
      // Narrow: a few matches, through the prefix indexes.
      expect((await names('q=broad%2010099')).data.map((u) => u.name)).toEqual(['Broad 10099']);
      expect((await names('q=broad%201099&limit=200')).data.map((u) => u.name)).toEqual([
        ...Array.from({ length: 10 }, (_, i) => `Broad 1099${9 - i}`),
        'Broad 1099',
      ]);
      expect((await names('q=other')).data.map((u) => u.name)).toEqual(['Other newest']);
    });

    it('q reads digits as a national number of the default country too; phone= and q= agree', async () => {
      const gb = await makeOrg(t.ctx, 'paid', 'GB');
      const h = (await makeKey(t.ctx, gb.id)).auth;
      const mobile = (
        await call(t.app, 'POST', '/api/endusers', h, { origin: 'manual', phone: '07400 123456' })
      ).json();
      const london = (
        await call(t.app, 'POST', '/api/endusers', h, { origin: 'manual', phone: '+44 20 7946 0958' })
      ).json();
      const us = (await call(t.app, 'POST', '/api/endusers', h, { origin: 'manual', phone: '+1 415 555 2671' })).json();
      const q = async (text: string) =>
        idsOf(await call(t.app, 'GET', `/api/endusers?q=${encodeURIComponent(text)}`, h)).sort();
      expect(idsOf(await call(t.app, 'GET', '/api/endusers?phone=07400123456', h))).toEqual([mobile._id]);
      expect(await q('07400')).toEqual([mobile._id]);
      expect(await q('07400 123')).toEqual([mobile._id]);
      expect(await q('(020) 7946')).toEqual([london._id]);
      expect(await q('+447400')).toEqual([mobile._id]);
      expect(await q('447400')).toEqual([mobile._id]);
      expect(await q('+44')).toEqual([mobile._id, london._id].sort());
      expect(await q('1415')).toEqual([us._id]);
      expect(await q('07500')).toEqual([]);
      // Without a default country, 07400 is not a number anywhere.
      const none = await makeTenant(t.ctx);
      await call(t.app, 'POST', '/api/endusers', none.orgKey.auth, { origin: 'manual', phone: '+447400123456' });
      expect(idsOf(await call(t.app, 'GET', '/api/endusers?q=07400', none.orgKey.auth))).toEqual([]);
      expect(idsOf(await call(t.app, 'GET', '/api/endusers?q=447400', none.orgKey.auth))).toHaveLength(1);
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

    it('a profile name with no visible character is no name; a name it fills is found by q', async () => {
      const org = await makeOrg(t.ctx);
      const key = await makeKey(t.ctx, org.id);
      const p = phone();
      const first = await recordInboundEndUser(t.ctx.db, t.ctx.clock, {
        orgId: org.id,
        phone: p,
        name: '\u200b ',
        at: 1,
      });
      expect((await call(t.app, 'GET', `/api/endusers/${first.id}`, key.auth)).json().name).toBeNull();
      await recordInboundEndUser(t.ctx.db, t.ctx.clock, { orgId: org.id, phone: p, name: ' Ödön\u0000 ', at: 2 });
      expect((await call(t.app, 'GET', `/api/endusers/${first.id}`, key.auth)).json().name).toBe('Ödön');
      expect(idsOf(await call(t.app, 'GET', '/api/endusers?q=%C3%B6d', key.auth))).toEqual([first.id]);
    });
  });

  it('the OpenAPI document describes every end-user route with its errors, 405 with Allow and INVALID_URL', async () => {
    const ops = listOperations(t.app).filter((op) => op.path.startsWith('/api/endusers'));
    expect(ops.map((op) => `${op.method} ${op.path}`).sort()).toEqual([
      'DELETE /api/endusers/{endUserId}',
      'GET /api/endusers',
      'GET /api/endusers/{endUserId}',
      'PATCH /api/endusers/{endUserId}',
      'POST /api/endusers',
      'POST /api/endusers/batch',
    ]);
    const allow: Record<string, string> = {
      '/api/endusers': 'GET, HEAD, POST',
      '/api/endusers/batch': 'POST',
      '/api/endusers/{endUserId}': 'GET, HEAD, PATCH, DELETE',
    };
    const doc = openApiDocument(t.app);
    for (const op of ops) {
      const name = `${op.method} ${op.path}`;
      expect(op.secured).toBe(true);
      expect(op.statuses).toEqual(expect.arrayContaining(['400', '401', '403', '405', '500', '503']));
      const responses = doc.paths[op.path]?.[op.method.toLowerCase()]?.responses ?? {};
      const r405 = responses['405'] as { description?: string; headers?: Record<string, { schema?: unknown }> };
      expect(r405.description, name).toMatch(/METHOD_NOT_ALLOWED/);
      expect(r405.headers?.Allow?.schema, name).toEqual({ type: 'string', enum: [allow[op.path]] });
      if (op.path.includes('{endUserId}')) {
        expect(responses['400']?.description, name).toMatch(/INVALID_URL.*\/api\/endusers\/a\/b/);
        expect(responses['404']?.description, name).toMatch(/NOT_FOUND/);
      }
    }
    const batch = doc.paths['/api/endusers/batch']?.post;
    expect(JSON.stringify(batch)).toContain(String(t.ctx.config.bodyLimit));
    expect(batch?.responses?.['413']?.description).toMatch(/smaller batches|fewer items/);
  });
});

describe.each(DIALECTS)('end-user search key migration (%s)', (dialect) => {
  it('backfills the search key of records stored before it, so q finds them', async () => {
    const t = await createTestApp(dialect);
    try {
      const schema =
        dialect === 'postgres'
          ? ((await sql<{ schema: string }>`select current_schema() as schema`.execute(t.ctx.db)).rows[0]?.schema ??
            undefined)
          : undefined;
      const migrator = new Migrator({
        db: t.ctx.db,
        provider: migrationProvider,
        ...(schema ? { migrationTableSchema: schema } : {}),
      });
      const down = await migrator.migrateTo('0006-webhook-dead-letters');
      expect(down.error).toBeUndefined();
      // Every later migration is undone first, 0007 last.
      const undone = down.results?.map((r) => [r.migrationName, r.direction]) ?? [];
      expect(undone.at(-1)).toEqual(['0007-end-user-search', 'Down']);
      expect(undone.every(([, direction]) => direction === 'Down')).toBe(true);

      const tenant = await makeTenant(t.ctx);
      const names = ['ÉMILE Zola', 'Ada', null];
      for (const [i, name] of names.entries()) {
        await sql`INSERT INTO end_users (id, org_id, name, email, phone, tags, origin, channel_identifiers, consent, created_at, last_seen_at, updated_at)
          VALUES (${`eu_backfill${String(i).padStart(11, '0')}`}, ${tenant.org.id}, ${name}, ${`old${i}@example.com`}, null, '[]', 'imported', '{}', '{}', ${1000 + i}, null, ${1000 + i})`.execute(
          t.ctx.db,
        );
      }
      const up = await migrator.migrateToLatest();
      expect(up.error).toBeUndefined();
      const stored = await t.ctx.db
        .selectFrom('end_users')
        .select(['name', 'name_search'])
        .where('org_id', '=', tenant.org.id)
        .orderBy('created_at')
        .execute();
      expect(stored).toEqual([
        { name: 'ÉMILE Zola', name_search: 'émile zola' },
        { name: 'Ada', name_search: 'ada' },
        { name: null, name_search: null },
      ]);
      const found = await t.app.inject({ method: 'GET', url: '/api/endusers?q=%C3%A9mi', headers: tenant.orgKey.auth });
      expect(found.json().data.map((u: { name: string }) => u.name)).toEqual(['ÉMILE Zola']);
    } finally {
      await t.close();
    }
  });
});

/**
 * Behaviours of the whole HTTP layer (src/http, not this feature's code), as end-user routes show
 * them: NUL characters, malformed percent-encoding, over-long path segments, empty JSON bodies.
 */
describe.each(DIALECTS)('global HTTP behaviours on the end-user routes (%s)', (dialect) => {
  let t: TestApp;
  let auth: Headers;
  beforeAll(async () => {
    t = await createTestApp(dialect);
    auth = (await makeTenant(t.ctx)).orgKey.auth;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a NUL in a body string or a query value is 400 INVALID_BODY naming it; in a path parameter 404', async () => {
    for (const [url, payload, field] of [
      ['/api/endusers', '{"origin":"manual","name":"a\\u0000b"}', 'name'],
      ['/api/endusers/batch', '{"origin":"manual","endUsers":[{"name":"a\\u0000"}]}', 'endUsers.0.name'],
    ] as const) {
      const res = await send(t.app, {
        method: 'POST',
        url,
        headers: { ...auth, 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode, url).toBe(400);
      expect(res.json()).toEqual({ error: expect.any(String), code: 'INVALID_BODY', field });
    }
    const query = await call(t.app, 'GET', '/api/endusers?q=a%00b', auth);
    expect(query.statusCode).toBe(400);
    expect(query.json()).toEqual({ error: expect.any(String), code: 'INVALID_BODY', field: 'q' });
    const path = await call(t.app, 'GET', '/api/endusers/eu_a%00b', auth);
    expect(path.statusCode).toBe(404);
    expect(path.json()).toEqual({ error: expect.any(String), code: 'NOT_FOUND' });
  });

  it('a by-ID path: bad percent-encoding is 400 INVALID_URL, an ID merely long is 404 NOT_FOUND', async () => {
    const bad = await call(t.app, 'GET', '/api/endusers/%E0%A4%A', auth);
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: expect.any(String), code: 'INVALID_URL' });
    for (const length of [65, 101, 1000, 5000]) {
      const res = await call(t.app, 'GET', `/api/endusers/${'e'.repeat(length)}`, auth);
      expect(res.statusCode, String(length)).toBe(404);
      expect(res.json()).toEqual({ error: expect.any(String), code: 'NOT_FOUND' });
    }
  });

  it('an empty body with Content-Type: application/json on GET and DELETE is no body', async () => {
    const created = await call(t.app, 'POST', '/api/endusers', auth, { origin: 'manual', name: 'Empty body' });
    const id = created.json()._id;
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await send(t.app, {
        method,
        url: `/api/endusers/${id}`,
        headers: { ...auth, 'content-type': 'application/json' },
        payload: '',
      });
      expect(res.statusCode, method).toBe(200);
    }
    expect((await call(t.app, 'GET', `/api/endusers/${id}`, auth)).statusCode).toBe(404);
  });
});
