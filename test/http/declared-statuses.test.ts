import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { expectDocumentedResponse, listOperations } from '../helpers/contract.js';
import { makeSendingTenant } from '../helpers/messaging.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const OVER_ONE_MIB = JSON.stringify({ text: 'x'.repeat(1024 * 1024 + 10) });

/**
 * What /api/openapi.json promises must be what the server answers: the challenge's media type,
 * and every status a route's shape implies (a 413 where a body is read, a 400 where a query is).
 * The document is the same on either database: SQLite only.
 */
describe('the served description names every answer (sqlite)', () => {
  let t: TestApp;
  let auth: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp('sqlite', { env: { PARLEY_WEBHOOK_VERIFY_TOKEN: 'verify-me' } });
    auth = (await makeSendingTenant(t.ctx)).orgKey.auth;
  });
  afterAll(async () => {
    await t?.close();
  });

  const served = async () => (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();

  it('the verification challenge is documented as the text/plain it is', async () => {
    const url = '/webhooks/msgapp?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444';
    const res = await t.app.inject({ method: 'GET', url });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('1158201444');
    expect(Object.keys((await served()).paths['/webhooks/msgapp'].get.responses['200'].content)).toEqual([
      'text/plain',
    ]);
    expectDocumentedResponse(t.app, 'GET', url, res);
  });

  it('hub.challenge=%00 is a documented 400', async () => {
    const url = '/webhooks/msgapp?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=%00';
    const res = await t.app.inject({ method: 'GET', url });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'INVALID_BODY' });
    expectDocumentedResponse(t.app, 'GET', url, res);
  });

  it.each([
    ['/api/conversations/conv_nonexistent/close', OVER_ONE_MIB, 1024 * 1024],
    // The sandbox's inbound messages may carry a file: its limit is 24 MiB.
    ['/api/sandbox/inbound', `"${'x'.repeat(24 * 1024 * 1024)}"`, 24 * 1024 * 1024],
  ] as const)('a body over its limit to POST %s is a documented 413', async (url, payload, limit) => {
    const res = await t.app.inject({
      method: 'POST',
      url,
      headers: { ...auth, 'content-type': 'application/json' },
      payload,
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({
      success: false,
      error: `The request body is larger than the limit of ${limit} bytes.`,
    });
    expectDocumentedResponse(t.app, 'POST', url, res);
  });

  it('every operation declares 400; with path parameters 404; where a body is read 413 (never 415)', async () => {
    const doc = await served();
    const missing: string[] = [];
    for (const op of listOperations(t.app)) {
      const statuses = Object.keys(doc.paths[op.path][op.method.toLowerCase()].responses);
      const want = ['400'];
      if (op.path.includes('{')) want.push('404');
      if (BODY_METHODS.has(op.method)) want.push('413');
      for (const s of want) if (!statuses.includes(s)) missing.push(`${op.method} ${op.path} ${s}`);
      expect(statuses, `${op.method} ${op.path}`).not.toContain('415');
    }
    expect(missing).toEqual([]);
  });

  it('every operation: a NUL in a query value and an oversized body answer as documented', async () => {
    for (const op of listOperations(t.app)) {
      const url = op.path.replace(/\{[^}]+\}/g, 'x_1');
      const nul = await t.app.inject({ method: op.method as 'GET', url: `${url}?q=%00`, headers: auth });
      expectDocumentedResponse(t.app, op.method, url, nul);
      if (!BODY_METHODS.has(op.method)) continue;
      const big = await t.app.inject({
        method: op.method as 'POST',
        url,
        headers: { ...auth, 'content-type': 'application/json' },
        payload: OVER_ONE_MIB,
      });
      expectDocumentedResponse(t.app, op.method, url, big);
    }
  });
});
