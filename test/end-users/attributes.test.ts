import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { makeOrg, makeTenant } from '../helpers/factories.js';
import { call, type HttpRequest } from '../helpers/http.js';

describe.each(DIALECTS)('end-user attributes over real HTTP (%s)', (dialect) => {
  let t: TestApp & { url: string };
  let dir: string;
  beforeAll(async () => {
    const app = await createTestApp(dialect);
    await app.app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.app.server.address();
    t = Object.assign(app, { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` });
    dir = mkdtempSync(join(tmpdir(), 'parley-attributes-'));
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const send = (auth: Record<string, string>, req: Omit<HttpRequest, 'headers'>) => call(t, { ...req, headers: auth });

  it('create and batch take attributes; every rule broken is 400 INVALID_BODY naming the field, nothing stored', async () => {
    const { org, orgKey } = await makeTenant(t.ctx);
    const auth = orgKey.auth;
    const made = await send(auth, {
      method: 'POST',
      url: '/api/endusers',
      payload: { origin: 'manual', name: 'Ada', attributes: { plan: 'pro', seats: 12, trial: false } },
    });
    expect(made.statusCode).toBe(201);
    expect(made.json().attributes).toEqual({ plan: 'pro', seats: 12, trial: false });
    const got = await send(auth, { method: 'GET', url: `/api/endusers/${made.json()._id}` });
    expect(got.json().attributes).toEqual({ plan: 'pro', seats: 12, trial: false });

    const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]));
    const cases: [unknown, string][] = [
      [{ 'bad-key': 'x' }, 'attributes.bad-key'],
      [{ ['k'.repeat(65)]: 'x' }, `attributes.${'k'.repeat(64)}...`],
      [tooMany, 'attributes'],
      [{ note: 'x'.repeat(1001) }, 'attributes.note'],
      [{ nested: { a: 1 } }, 'attributes.nested'],
      [{ list: [1] }, 'attributes.list'],
      [{ empty: null }, 'attributes.empty'],
      ['pro', 'attributes'],
    ];
    for (const [attributes, field] of cases) {
      const res = await send(auth, {
        method: 'POST',
        url: '/api/endusers',
        payload: { origin: 'manual', name: 'Refused', attributes },
      });
      expect(res.statusCode, JSON.stringify(attributes).slice(0, 80)).toBe(400);
      expect(res.json()).toMatchObject({ code: 'INVALID_BODY', error: expect.any(String) });
      if (field !== 'attributes')
        expect(res.json().field ?? '', JSON.stringify(attributes)).toContain(field.split('.')[0]);
    }
    // 50 keys and 1,000 characters are allowed.
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'x'.repeat(1000)]));
    const full = await send(auth, {
      method: 'POST',
      url: '/api/endusers',
      payload: { origin: 'manual', name: 'Full', attributes: fifty },
    });
    expect(full.statusCode).toBe(201);
    const stored = await t.ctx.db.selectFrom('end_users').select('name').where('org_id', '=', org.id).execute();
    expect(stored.map((r) => r.name).sort()).toEqual(['Ada', 'Full']);

    const batch = await send(auth, {
      method: 'POST',
      url: '/api/endusers/batch',
      payload: {
        origin: 'imported',
        endUsers: [
          { name: 'B1', attributes: { plan: 'pro' } },
          { name: 'B2', attributes: { 'no way': 1 } },
        ],
      },
    });
    expect(batch.statusCode).toBe(200);
    expect(batch.json()).toMatchObject({ created: 1, failed: 1 });
    expect(batch.json().results[0].endUser.attributes).toEqual({ plan: 'pro' });
    expect(batch.json().results[1]).toMatchObject({ status: 'failed', code: 'INVALID_BODY' });
  });

  it('PATCH merges key by key: null removes a key, "attributes": null removes all; over 50 after the merge is refused', async () => {
    const { orgKey } = await makeTenant(t.ctx);
    const auth = orgKey.auth;
    const made = await send(auth, {
      method: 'POST',
      url: '/api/endusers',
      payload: { origin: 'manual', name: 'Patchy', attributes: { plan: 'free', seats: 1, city: 'Porto' } },
    });
    const id = made.json()._id;
    const patched = await send(auth, {
      method: 'PATCH',
      url: `/api/endusers/${id}`,
      payload: { attributes: { plan: 'pro', city: null, vip: true } },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().attributes).toEqual({ plan: 'pro', seats: 1, vip: true });
    const filtered = await send(auth, { method: 'GET', url: '/api/endusers?attribute=plan:pro' });
    expect(filtered.json().data.map((u: { _id: string }) => u._id)).toEqual([id]);
    expect((await send(auth, { method: 'GET', url: '/api/endusers?attribute=city:Porto' })).json().data).toEqual([]);

    const tooMany = Object.fromEntries(Array.from({ length: 48 }, (_, i) => [`n${i}`, i]));
    const refused = await send(auth, { method: 'PATCH', url: `/api/endusers/${id}`, payload: { attributes: tooMany } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ code: 'INVALID_BODY', field: 'attributes' });
    const bad = await send(auth, {
      method: 'PATCH',
      url: `/api/endusers/${id}`,
      payload: { attributes: { x: 'y', 'a.b': 1 } },
    });
    expect(bad.statusCode).toBe(400);
    expect((await send(auth, { method: 'GET', url: `/api/endusers/${id}` })).json().attributes).toEqual({
      plan: 'pro',
      seats: 1,
      vip: true,
    });

    const cleared = await send(auth, { method: 'PATCH', url: `/api/endusers/${id}`, payload: { attributes: null } });
    expect(cleared.json().attributes).toEqual({});
    expect((await send(auth, { method: 'GET', url: '/api/endusers?attribute=plan:pro' })).json().data).toEqual([]);
  });

  it('attribute=key:value filters, repeatable (all must match); numbers and booleans compare as their JSON text', async () => {
    const { orgKey } = await makeTenant(t.ctx);
    const auth = orgKey.auth;
    const people = [
      { name: 'P1', attributes: { plan: 'pro', seats: 12, trial: false, url: 'https://x.test/a' } },
      { name: 'P2', attributes: { plan: 'pro', seats: '12' } },
      { name: 'P3', attributes: { plan: 'free', seats: 12 } },
      { name: 'P4' },
    ];
    await send(auth, { method: 'POST', url: '/api/endusers/batch', payload: { origin: 'manual', endUsers: people } });
    const names = async (query: string) => {
      const res = await send(auth, { method: 'GET', url: `/api/endusers?${query}` });
      expect(res.statusCode, res.body).toBe(200);
      return res
        .json()
        .data.map((u: { name: string }) => u.name)
        .sort();
    };
    expect(await names('attribute=plan:pro')).toEqual(['P1', 'P2']);
    expect(await names('attribute=seats:12')).toEqual(['P1', 'P2', 'P3']);
    expect(await names('attribute=plan:pro&attribute=seats:12&attribute=trial:false')).toEqual(['P1']);
    expect(await names(`attribute=${encodeURIComponent('url:https://x.test/a')}`)).toEqual(['P1']);
    expect(await names('attribute=plan:pro&origin=manual&limit=1')).toHaveLength(1);
    expect(await names('attribute=plan:PRO')).toEqual([]);
    for (const query of ['attribute=plan', 'attribute=bad-key:1', 'attribute=:x']) {
      const res = await send(auth, { method: 'GET', url: `/api/endusers?${query}` });
      expect(res.statusCode, query).toBe(400);
      expect(res.json()).toMatchObject({ code: 'INVALID_BODY', field: expect.stringMatching(/^attribute/) });
    }
  });

  it('the CSV import maps unknown columns to attributes; --refuse-unknown-columns imports nothing', async () => {
    const org = await makeOrg(t.ctx, 'paid', 'US');
    const file = join(dir, `attrs-${dialect}.csv`);
    writeFileSync(file, 'name,email,plan,Seats\nAna,ana@example.com,pro,3\nBo,bo@example.com,,\n');
    const refused = await runCli(['endusers', 'import', file, '--org', org.id, '--refuse-unknown-columns'], t.env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('"plan", "Seats"');
    expect(await t.ctx.db.selectFrom('end_users').select('id').where('org_id', '=', org.id).execute()).toEqual([]);

    const run = await runCli(['endusers', 'import', file, '--org', org.id, '--json'], t.env);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ rows: 2, created: 2, rejected: 0 });
    const rows = await t.ctx.db
      .selectFrom('end_users')
      .select(['name', 'attributes'])
      .where('org_id', '=', org.id)
      .orderBy('name')
      .execute();
    expect(rows.map((r) => [r.name, JSON.parse(r.attributes ?? '{}')])).toEqual([
      ['Ana', { plan: 'pro', Seats: '3' }],
      ['Bo', {}],
    ]);

    const badHeader = join(dir, `bad-header-${dialect}.csv`);
    writeFileSync(badHeader, 'name,favourite colour\nCy,blue\n');
    const bad = await runCli(['endusers', 'import', badHeader, '--org', org.id], t.env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('"favourite colour" cannot be attributes');
  });
});
