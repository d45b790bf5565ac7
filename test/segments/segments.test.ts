import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { call, type HttpRequest } from '../helpers/http.js';

describe.each(DIALECTS)('segments over real HTTP (%s)', (dialect) => {
  let t: TestApp & { url: string };
  beforeAll(async () => {
    const app = await createTestApp(dialect);
    await app.app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.app.server.address();
    t = Object.assign(app, { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` });
  });
  afterAll(async () => {
    await t?.close();
  });

  const send = (auth: Record<string, string>, req: Omit<HttpRequest, 'headers'>) => call(t, { ...req, headers: auth });

  /** Ten people with a known mix of tags, attributes, consent, origin and last-seen times. */
  async function people(auth: Record<string, string>) {
    const endUsers = Array.from({ length: 10 }, (_, i) => ({
      name: `P${i}`,
      phone: `+1650555${String(1000 + i)}`,
      tags: [i % 2 === 0 ? 'vip' : 'regular', ...(i % 3 === 0 ? ['beta'] : [])],
      attributes: { plan: i < 5 ? 'pro' : 'free', seats: i },
      ...(i === 0 ? { consent: { msgapp: { status: 'denied' as const } } } : {}),
      ...(i === 2 ? { consent: { msgapp: { status: 'granted' as const } } } : {}),
    }));
    const res = await send(auth, {
      method: 'POST',
      url: '/api/endusers/batch',
      payload: { origin: 'imported', endUsers },
    });
    expect(res.json().created).toBe(10);
    const ids = res.json().results.map((r: { endUser: { _id: string } }) => r.endUser._id) as string[];
    // Last seen: P0..P4 at 1,000,000 + i; the others never.
    for (const [i, id] of ids.slice(0, 5).entries()) {
      await t.ctx.db
        .updateTable('end_users')
        .set({ last_seen_at: 1_000_000 + i })
        .where('id', '=', id)
        .execute();
    }
    return ids;
  }

  it('a segment counts and lists exactly the end users its filter matches; the count is fresh on GET', async () => {
    const { orgKey } = await makeTenant(t.ctx);
    const auth = orgKey.auth;
    const ids = await people(auth);
    const cases: [Record<string, unknown>, number[]][] = [
      [{}, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]],
      [{ tags: { any: ['vip'] } }, [0, 2, 4, 6, 8]],
      [{ tags: { any: ['beta', 'regular'] } }, [0, 1, 3, 5, 6, 7, 9]],
      [{ tags: { all: ['vip', 'beta'] } }, [0, 6]],
      [{ attributes: { plan: 'pro' } }, [0, 1, 2, 3, 4]],
      [{ attributes: { plan: 'pro', seats: 3 } }, [3]],
      [{ consent: 'granted' }, [2]],
      [{ consent: 'not_denied' }, [1, 2, 3, 4, 5, 6, 7, 8, 9]],
      [{ lastSeenAfter: 1_000_002 }, [2, 3, 4]],
      [{ lastSeenBefore: 1_000_002 }, [0, 1]],
      [{ origin: 'manual' }, []],
      [{ tags: { any: ['vip'] }, attributes: { plan: 'pro' }, consent: 'not_denied', origin: 'imported' }, [2, 4]],
    ];
    for (const [filter, expected] of cases) {
      const made = await send(auth, {
        method: 'POST',
        url: '/api/segments',
        payload: { name: ' Some people ', filter },
      });
      expect(made.statusCode, made.body).toBe(201);
      expect(made.json()).toEqual({
        id: expect.stringMatching(/^seg_[0-9A-Za-z]{22}$/),
        name: 'Some people',
        filter,
        count: expected.length,
        createdAt: expect.any(Number),
      });
      // Every member, two to a page.
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await send(auth, {
          method: 'GET',
          url: `/api/segments/${made.json().id}/endusers?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        });
        expect(page.statusCode).toBe(200);
        seen.push(...page.json().data.map((u: { _id: string }) => u._id));
        cursor = page.json().nextCursor;
      } while (cursor);
      expect(seen.sort(), JSON.stringify(filter)).toEqual(expected.map((i) => ids[i]).sort());
    }

    const vip = await send(auth, {
      method: 'POST',
      url: '/api/segments',
      payload: { name: 'VIP', filter: { tags: { any: ['vip'] } } },
    });
    await send(auth, { method: 'PATCH', url: `/api/endusers/${ids[1]}`, payload: { tags: ['vip'] } });
    const fresh = await send(auth, { method: 'GET', url: `/api/segments/${vip.json().id}` });
    expect(fresh.json().count).toBe(6);
    const list = await send(auth, { method: 'GET', url: '/api/segments?limit=1' });
    expect(list.json().data).toEqual([{ ...fresh.json() }]);
    expect(list.json().nextCursor).toEqual(expect.any(String));
    const next = await send(auth, {
      method: 'GET',
      url: `/api/segments?limit=100&cursor=${encodeURIComponent(list.json().nextCursor)}`,
    });
    expect(next.json().data).toHaveLength(cases.length);

    const gone = await send(auth, { method: 'DELETE', url: `/api/segments/${vip.json().id}` });
    expect(gone.json()).toEqual({ id: vip.json().id, deleted: true });
    expect((await send(auth, { method: 'GET', url: `/api/segments/${vip.json().id}` })).statusCode).toBe(404);
    expect((await send(auth, { method: 'DELETE', url: `/api/segments/${vip.json().id}` })).json()).toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('bad input is 400 INVALID_BODY naming the field, nothing saved; keys, tenants and methods as for end users', async () => {
    const { orgKey, agentKey } = await makeTenant(t.ctx);
    const other = await makeTenant(t.ctx);
    const auth = orgKey.auth;
    const bad: [unknown, string][] = [
      [{ filter: {} }, 'name'],
      [{ name: '  ', filter: {} }, 'name'],
      [{ name: 'x', filter: { tags: { any: [] } } }, 'filter.tags.any'],
      [{ name: 'x', filter: { tags: { any: ['  '] } } }, 'filter.tags.any.0'],
      [{ name: 'x', filter: { consent: 'denied' } }, 'filter.consent'],
      [{ name: 'x', filter: { origin: 'elsewhere' } }, 'filter.origin'],
      [{ name: 'x', filter: { attributes: { 'bad key': 1 } } }, 'filter.attributes'],
      [{ name: 'x', filter: { attributes: { plan: null } } }, 'filter.attributes.plan'],
      [{ name: 'x', filter: { lastSeenAfter: -1 } }, 'filter.lastSeenAfter'],
      [{ name: 'x', filter: { color: 'red' } }, 'filter'],
      [{ name: 'x' }, 'filter'],
    ];
    for (const [payload, field] of bad) {
      const res = await send(auth, { method: 'POST', url: '/api/segments', payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json(), JSON.stringify(payload)).toMatchObject({ code: 'INVALID_BODY', error: expect.any(String) });
      expect(String(res.json().field ?? 'filter'), JSON.stringify(payload)).toContain(field.split('.')[0]);
    }
    expect((await send(auth, { method: 'GET', url: '/api/segments' })).json().data).toEqual([]);

    const made = await send(auth, { method: 'POST', url: '/api/segments', payload: { name: 'All', filter: {} } });
    const id = made.json().id;
    expect((await send(agentKey.auth, { method: 'GET', url: '/api/segments' })).json()).toMatchObject({
      code: 'FORBIDDEN',
    });
    expect((await send({}, { method: 'GET', url: '/api/segments' })).json()).toMatchObject({ code: 'UNAUTHORIZED' });
    const foreign = await send(other.orgKey.auth, { method: 'GET', url: `/api/segments/${id}` });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json()).toMatchObject({ code: 'NOT_FOUND' });
    const put = await send(auth, { method: 'PUT', url: `/api/segments/${id}`, payload: {} });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe('GET, HEAD, DELETE');
    expect(put.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED' });
    const badCursor = await send(auth, { method: 'GET', url: `/api/segments/${id}/endusers?cursor=nope` });
    expect(badCursor.json()).toMatchObject({ code: 'INVALID_BODY', field: 'cursor' });
  });
});
