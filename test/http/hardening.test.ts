import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDACT_PATHS } from '../../src/shared/logger.js';
import { DIALECTS, type TestApp } from '../helpers/app.js';
import { contractViolation } from '../helpers/contract.js';
import { makeKey, makeOrg } from '../helpers/factories.js';
import {
  createProbeApp,
  INTERNAL_SECRET,
  PROBE_AGENT_PATH,
  PROBE_CHANNEL,
  PROBE_CODED,
  PROBE_CRASH,
  PROBE_SLOW,
  slowRequestsStarted,
} from '../helpers/platform-probe.js';
import { until } from '../helpers/wait.js';

const BODY_LIMIT = 2048;

/** A protected POST route of each family; real feature routes join when registered. */
const POSTS: { url: string; family: 'channel' | 'coded'; real?: boolean }[] = [
  { url: PROBE_CODED, family: 'coded' },
  { url: PROBE_CHANNEL, family: 'channel' },
  { url: '/api/endusers', family: 'coded', real: true },
  { url: '/api/channels/send', family: 'channel', real: true },
];

function captureLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const logger = pino({ level: 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, stream);
  return { logger, lines };
}

describe.each(DIALECTS)('hardening (%s)', (dialect) => {
  let t: TestApp;
  let auth: { authorization: string };
  let key: string;
  const logs = captureLogger();
  const registered = new Set<string>();

  beforeAll(async () => {
    t = await createProbeApp(dialect, { env: { PARLEY_BODY_LIMIT: String(BODY_LIMIT) }, logger: logs.logger });
    const org = await makeOrg(t.ctx);
    const k = await makeKey(t.ctx, org.id, { permissions: ['channels', 'triggers', 'endusers'] });
    auth = k.auth;
    key = k.key;
    for (const p of POSTS) {
      const res = await t.app.inject({ method: 'POST', url: p.url });
      if (!(res.statusCode === 404 && /^No route/.test(String(res.json().error)))) registered.add(p.url);
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  const envelopeOf = (family: 'channel' | 'coded', body: Record<string, unknown>, code: string) => {
    if (family === 'channel') expect(body).toEqual({ success: false, error: expect.any(String) });
    else expect(body).toMatchObject({ error: expect.any(String), code });
  };

  it('every route these checks name is registered (none is skipped)', () => {
    expect([...registered].sort()).toEqual(POSTS.map((p) => p.url).sort());
  });

  it('unknown route: 404 JSON, in the envelope of its URL family', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/nothing/here?x=1' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.json()).toEqual({ error: 'No route GET /api/nothing/here.', code: 'NOT_FOUND' });
    const channel = await t.app.inject({ method: 'POST', url: '/api/channels/nope' });
    expect(channel.statusCode).toBe(404);
    expect(channel.json()).toEqual({ success: false, error: 'No route POST /api/channels/nope.' });
    const other = await t.app.inject({ method: 'GET', url: '/nothing' });
    expect(other.statusCode).toBe(404);
    expect(other.json().code).toBe('NOT_FOUND');
  });

  for (const post of POSTS) {
    describe(`POST ${post.url}${post.real ? ' (feature route)' : ''}`, () => {
      const skip = () => !registered.has(post.url);

      it('malformed JSON: 400 in the route envelope', async (c) => {
        if (skip()) c.skip();
        const res = await t.app.inject({
          method: 'POST',
          url: post.url,
          headers: { ...auth, 'content-type': 'application/json' },
          payload: '{"to": "+1415',
        });
        expect(res.statusCode).toBe(400);
        envelopeOf(post.family, res.json(), 'INVALID_BODY');
        expect(res.json().error).toBe('The request body is not valid JSON.');
      });

      it('wrong content type: 400 in the route envelope', async (c) => {
        if (skip()) c.skip();
        for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
          const res = await t.app.inject({
            method: 'POST',
            url: post.url,
            headers: { ...auth, 'content-type': type },
            payload: 'a=1',
          });
          expect(res.statusCode, type).toBe(400);
          envelopeOf(post.family, res.json(), 'INVALID_BODY');
          expect(res.json().error).toBe('The Content-Type must be application/json.');
        }
      });

      it('empty JSON body: 400', async (c) => {
        if (skip()) c.skip();
        const res = await t.app.inject({
          method: 'POST',
          url: post.url,
          headers: { ...auth, 'content-type': 'application/json' },
          payload: '',
        });
        expect(res.statusCode).toBe(400);
        envelopeOf(post.family, res.json(), 'INVALID_BODY');
      });

      it(`body over the limit (${BODY_LIMIT} bytes): 413 in the route envelope`, async (c) => {
        if (skip()) c.skip();
        const res = await t.app.inject({
          method: 'POST',
          url: post.url,
          headers: { ...auth, 'content-type': 'application/json' },
          payload: JSON.stringify({ pad: 'x'.repeat(BODY_LIMIT) }),
        });
        expect(res.statusCode).toBe(413);
        envelopeOf(post.family, res.json(), 'PAYLOAD_TOO_LARGE');
        expect(res.json().error).toContain(String(BODY_LIMIT));
        expect(contractViolation(t.app, 'POST', post.url, res)).toBeNull();
      });

      it('the key is checked before the body is read: 401 even for a broken body', async (c) => {
        if (skip()) c.skip();
        const res = await t.app.inject({
          method: 'POST',
          url: post.url,
          headers: { 'content-type': 'text/plain' },
          payload: 'x'.repeat(BODY_LIMIT * 2),
        });
        expect(res.statusCode).toBe(401);
      });
    });
  }

  it('an unknown route is a 404 before its body is read: not a 400 for bad JSON, not a 413', async () => {
    const bad = await t.app.inject({
      method: 'POST',
      url: '/api/nope',
      headers: { 'content-type': 'application/json' },
      payload: '{bad',
    });
    expect(bad.statusCode).toBe(404);
    expect(bad.json()).toEqual({ error: 'No route POST /api/nope.', code: 'NOT_FOUND' });
    const big = await t.app.inject({
      method: 'POST',
      url: '/api/health',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ pad: 'x'.repeat(BODY_LIMIT * 2) }),
    });
    expect(big.statusCode).toBe(404);
    expect(big.json()).toEqual({ error: 'No route POST /api/health.', code: 'NOT_FOUND' });
    const channel = await t.app.inject({
      method: 'PUT',
      url: '/api/channels/send',
      headers: { 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(channel.statusCode).toBe(404);
    expect(channel.json()).toEqual({ success: false, error: 'No route PUT /api/channels/send.' });
  });

  it('a NUL character in a body string is a 400 naming the field, in each envelope', async () => {
    const coded = await t.app.inject({
      method: 'POST',
      url: PROBE_CODED,
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{"n": 1, "convId": "a\\u0000b"}',
    });
    expect(coded.statusCode).toBe(400);
    expect(coded.json()).toEqual({
      error: "Invalid body: 'convId' must not contain the NUL character (\\u0000).",
      code: 'INVALID_BODY',
      field: 'convId',
    });
    const nested = await t.app.inject({
      method: 'POST',
      url: PROBE_CHANNEL,
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{"convId": "x", "deep": {"list": ["ok", "\\u0000"]}}',
    });
    expect(nested.statusCode).toBe(400);
    expect(nested.json()).toEqual({
      success: false,
      error: "Invalid body: 'deep.list.1' must not contain the NUL character (\\u0000).",
    });
    // An escaped backslash followed by "u0000" is ordinary text, not a NUL.
    const text = await t.app.inject({
      method: 'POST',
      url: PROBE_CODED,
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{"n": 1, "convId": "C:\\\\u0000"}',
    });
    expect(text.statusCode).toBe(404);
    expect(text.json().error).toBe('No agent matches "C:\\u0000".');
  });

  it('a NUL in a query value is a 400 naming it; in a path parameter a 404', async () => {
    const query = await t.app.inject({ method: 'GET', url: `${PROBE_CODED}?q=a%00b`, headers: auth });
    expect(query.statusCode).toBe(400);
    expect(query.json()).toEqual({
      error: "Invalid query parameter: 'q' must not contain the NUL character (%00).",
      code: 'INVALID_BODY',
      field: 'q',
    });
    const path = await t.app.inject({
      method: 'POST',
      url: PROBE_AGENT_PATH.replace(':agentId', 'a%00b'),
      headers: auth,
      payload: {},
    });
    expect(path.statusCode).toBe(404);
    expect(path.json()).toEqual({
      success: false,
      error: "Not found: the path parameter 'agentId' contains the NUL character.",
    });
    // Like a malformed path, decided from the URL alone, before the key.
    const anonymous = await t.app.inject({ method: 'GET', url: `${PROBE_CODED}?q=a%00b` });
    expect(anonymous.statusCode).toBe(400);
    expect(anonymous.json().code).toBe('INVALID_BODY');
  });

  it("'__proto__' in a body: a 400 that says so", async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: PROBE_CODED,
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{"n": 1, "__proto__": {"admin": true}}',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: "The request body must not use the keys '__proto__' or 'constructor.prototype'.",
      code: 'INVALID_BODY',
    });
  });

  it('an empty body sent with a JSON Content-Type on GET or DELETE is no body', async () => {
    const get = await t.app.inject({
      method: 'GET',
      url: PROBE_CODED,
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '',
    });
    expect(get.statusCode).toBe(200);
    const del = await t.app.inject({
      method: 'DELETE',
      url: '/api/endusers/eu_nosuchrecord0000000000',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '',
    });
    expect(del.statusCode).toBe(404);
    expect(del.json().code).toBe('NOT_FOUND');
  });

  it('a path that is not valid percent-encoding: 400 INVALID_URL in the envelope of its family', async () => {
    const coded = await t.app.inject({ method: 'GET', url: '/api/endusers/%E0%A4%A' });
    expect(coded.statusCode).toBe(400);
    expect(coded.json()).toEqual({
      error: 'The request path is not valid: it is not correctly percent-encoded.',
      code: 'INVALID_URL',
    });
    expect(coded.headers['x-content-type-options']).toBe('nosniff');
    expect(coded.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const channel = await t.app.inject({ method: 'GET', url: '/api/messages/%zz' });
    expect(channel.statusCode).toBe(400);
    expect(channel.json()).toEqual({
      success: false,
      error: 'The request path is not valid: it is not correctly percent-encoded.',
    });
  });

  it('a path parameter longer than any ID reaches the route (auth first); past 1,024 characters: 404', async () => {
    const long = await t.app.inject({
      method: 'POST',
      url: PROBE_AGENT_PATH.replace(':agentId', 'a'.repeat(300)),
      payload: {},
    });
    expect(long.statusCode).toBe(401);
    const huge = await t.app.inject({ method: 'GET', url: `/api/messages/${'a'.repeat(1100)}` });
    expect(huge.statusCode).toBe(404);
    expect(huge.json()).toEqual({ success: false, error: 'Not found: a path segment is longer than any ID.' });
    expect(huge.headers['x-frame-options']).toBe('DENY');
  });

  it('a schema violation names the field, without echoing internals', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: PROBE_CODED,
      headers: auth,
      payload: { n: 'one', extra: 1 },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'INVALID_BODY' });
    expect(res.json().error).toMatch(/^Invalid body: /);
  });

  it('a crash is a bare 500: no stack trace, no internal message; the log has it with the request ID', async () => {
    const res = await t.app.inject({ method: 'GET', url: PROBE_CRASH, headers: { 'x-request-id': 'crash-1' } });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: 'Internal server error.', code: 'INTERNAL' });
    expect(res.body).not.toContain('hunter2');
    expect(res.body).not.toMatch(/\bat .*\.ts:\d+/);
    expect(res.headers['x-request-id']).toBe('crash-1');
    const logged = logs.lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.reqId === 'crash-1' && l.level === 50);
    expect(logged).toBeTruthy();
    expect(JSON.stringify(logged)).toContain(INTERNAL_SECRET);
  });

  it('security headers on every response; no-store on authenticated ones', async () => {
    for (const res of [
      await t.app.inject({ method: 'GET', url: '/api/health' }),
      await t.app.inject({ method: 'GET', url: '/api/nope' }),
      await t.app.inject({ method: 'GET', url: PROBE_CODED, headers: auth }),
    ]) {
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(res.headers['cross-origin-resource-policy']).toBe('same-origin');
      expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/);
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['x-powered-by']).toBeUndefined();
    }
    const authed = await t.app.inject({ method: 'GET', url: PROBE_CODED, headers: auth });
    expect(authed.headers['cache-control']).toBe('no-store');
    const denied = await t.app.inject({ method: 'GET', url: PROBE_CODED });
    expect(denied.headers['cache-control']).toBe('no-store');
  });

  it('X-Request-Id: echoed when sane, replaced by a fresh one otherwise', async () => {
    const given = await t.app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'abc-123.x:y' } });
    expect(given.headers['x-request-id']).toBe('abc-123.x:y');
    const fresh = await t.app.inject({ method: 'GET', url: '/api/health' });
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    for (const bad of ['has spaces in it', 'x'.repeat(200), '<script>', 'a\u00e9b']) {
      const res = await t.app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': bad } });
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
    const err = await t.app.inject({ method: 'GET', url: '/api/nope', headers: { 'x-request-id': 'on-404' } });
    expect(err.headers['x-request-id']).toBe('on-404');
  });

  it('keys never reach the log', async () => {
    await t.app.inject({ method: 'GET', url: PROBE_CODED, headers: { ...auth, 'x-request-id': 'log-1' } });
    await t.app.inject({ method: 'GET', url: PROBE_CODED, headers: { authorization: `Bearer ${key}x` } });
    expect(logs.lines.some((l) => l.includes('log-1'))).toBe(true);
    expect(logs.lines.join('\n')).not.toContain(key.slice(7));
    // And whatever a developer passes to the logger by the usual names.
    t.ctx.logger.warn(
      { req: { headers: { authorization: `Bearer ${key}` } }, apiKey: key, nested: { key, token: key, password: 'p' } },
      'x',
    );
    t.ctx.logger.warn(
      { headers: { authorization: key }, request: { headers: { authorization: key, cookie: 'c' } } },
      'y',
    );
    expect(logs.lines.join('\n')).not.toContain(key.slice(7));
  });
});

describe.each(DIALECTS)('a broken database (%s)', (dialect) => {
  it('answers a bare 500 on each family, never the database error', async () => {
    const logs = captureLogger();
    const t = await createProbeApp(dialect, { logger: logs.logger });
    const org = await makeOrg(t.ctx);
    const k = await makeKey(t.ctx, org.id, { permissions: ['channels', 'endusers'] });
    await t.ctx.database.close();
    try {
      const coded = await t.app.inject({ method: 'GET', url: PROBE_CODED, headers: k.auth });
      expect(coded.statusCode).toBe(500);
      expect(coded.json()).toEqual({ error: 'Internal server error.', code: 'INTERNAL' });
      const channel = await t.app.inject({ method: 'POST', url: PROBE_CHANNEL, headers: k.auth, payload: {} });
      expect(channel.statusCode).toBe(500);
      expect(channel.json()).toEqual({ success: false, error: 'Internal server error.' });
      for (const res of [coded, channel]) {
        expect(res.body).not.toMatch(/sqlite|postgres|pool|destroy|driver|kysely/i);
      }
      expect(logs.lines.filter((l) => l.includes('"level":50')).length).toBeGreaterThanOrEqual(2);
    } finally {
      await t.app.close();
      await t.close().catch(() => undefined);
    }
  });
});

describe('graceful shutdown of the HTTP server', () => {
  it('finishes requests in flight, closes keep-alive connections, then refuses new ones', async () => {
    const t = await createProbeApp('sqlite');
    const url = await t.app.listen({ port: 0, host: '127.0.0.1' });
    try {
      // fetch keeps connections alive: the shutdown must not wait for their idle timeout.
      const before = slowRequestsStarted();
      const inFlight = fetch(`${url}${PROBE_SLOW}?ms=300`);
      await until(() => slowRequestsStarted() > before, 'the slow request in its handler');
      const started = Date.now();
      const closing = t.app.close();
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(res.headers.get('connection')).toBe('close');
      expect(await res.json()).toEqual({ done: true });
      await closing;
      expect(Date.now() - started).toBeLessThan(5000);
      await expect(fetch(`${url}/api/health`)).rejects.toThrow();
    } finally {
      await t.close();
    }
  });
});

describe('requests the HTTP parser refuses, and requests during shutdown', () => {
  const rawExchange = (port: number, bytes: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
      let out = '';
      socket.on('data', (d) => {
        out += d.toString();
      });
      socket.on('end', () => resolve(out));
      socket.on('error', reject);
    });

  it('not HTTP, or headers over the limit: a JSON answer in the coded envelope, with the security headers', async () => {
    const t = await createProbeApp('sqlite');
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const garbage = await rawExchange(port, 'HELLO THERE\r\n\r\n');
      expect(garbage).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(garbage).toContain('x-content-type-options: nosniff');
      expect(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4))).toEqual({
        error: 'The request is not valid HTTP.',
        code: 'MALFORMED_REQUEST',
      });
      const huge = await rawExchange(
        port,
        `GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      );
      expect(huge).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
      expect(JSON.parse(huge.slice(huge.indexOf('\r\n\r\n') + 4))).toEqual({
        error: 'The request headers are larger than the server accepts.',
        code: 'HEADERS_TOO_LARGE',
      });
    } finally {
      await t.close();
    }
  });

  it('a request arriving while the server shuts down: 503 in its envelope, with Retry-After', async () => {
    const t = await createProbeApp('sqlite');
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      // A request whose headers are still arriving when close() begins: its connection is busy,
      // so it is not dropped, and the request reaches the app after shutdown has started.
      const socket = connect(port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      let out = '';
      socket.on('data', (d) => {
        out += d.toString();
      });
      const ended = new Promise((r) => socket.once('close', r));
      socket.write('POST /api/channels/send HTTP/1.1\r\nHost: x\r\n');
      await new Promise((r) => setTimeout(r, 50));
      const closing = t.app.close();
      await new Promise((r) => setTimeout(r, 50));
      socket.write('Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
      await ended;
      await closing;
      expect(out).toMatch(/^HTTP\/1\.1 503 Service Unavailable/);
      expect(out).toMatch(/retry-after: 1/i);
      expect(out).toMatch(/x-content-type-options: nosniff/i);
      expect(JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4))).toEqual({
        success: false,
        error: 'The server is shutting down; retry in a moment.',
      });
    } finally {
      await t.close();
    }
  });
});
