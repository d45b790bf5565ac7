import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { familyOfUrl } from '../../src/http/errors.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { documentedResponseViolation, type OpenApiDocument } from '../helpers/contract.js';
import {
  CONTENT_TYPES,
  enc,
  fromSchema,
  MALFORMED,
  parseAnswers,
  pick,
  prng,
  type Rand,
  rawExchange,
  resolver,
  STRINGS,
} from '../helpers/fuzz.js';
import { makeSendingTenant } from '../helpers/messaging.js';

/**
 * The fuzz and contract suite: requests drawn from each operation's own schemas in the served
 * /api/openapi.json, plus the malformed kinds (deep nesting, NUL, lone surrogates, huge numbers,
 * duplicate keys, other media types, HEAD), a share of them over real keep-alive HTTP. Every answer
 * must be under 500, in its route's envelope when an error, and valid against the served
 * description (status, media type, body schema, documented headers, the code named); no
 * connection may be reset. In CI: a fixed seed and FUZZ_REQUESTS (default 2,000) across the
 * operations. By hand, long: `FUZZ_REQUESTS=100000 npx vitest run test/http/fuzz-openapi.test.ts`
 * (FUZZ_SEED to repeat a run; the figures are printed at the end).
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 2000);
// How long the run may take: 10 minutes, longer for a long run.
vi.setConfig({ testTimeout: Math.max(600_000, REQUESTS * 50) });
/** A share of the requests goes over real HTTP, on keep-alive connections, where a reset can show. */
const OVER_HTTP = 0.1;

interface Figures {
  sent: number;
  overHttp: number;
  fiveXx: string[];
  resets: string[];
  undeclared: string[];
  envelope: string[];
  statuses: Record<number, number>;
}

const pathValue = (rand: Rand, ids: readonly string[]) =>
  rand() < 0.5 ? pick(rand, ids) : enc(pick(rand, STRINGS) || 'x').slice(0, 300) || 'x';

describe.each(DIALECTS)('fuzz every operation of /api/openapi.json (%s)', (dialect) => {
  let t: TestApp;
  let port: number;
  let keys: Record<string, string>[];
  let ids: string[];
  const agent = new Agent({ keepAliveTimeout: 10_000, connections: 4 });

  beforeAll(async () => {
    t = await createTestApp(dialect, {
      env: {
        PARLEY_SEND_RATE_LIMIT: '1000000',
        PARLEY_SEND_RATE_LIMIT_ORG: '1000000',
        PARLEY_WEBHOOK_VERIFY_TOKEN: 'verify-me',
      },
    });
    const tenant = await makeSendingTenant(t.ctx);
    keys = [{}, tenant.orgKey.auth, tenant.agentKey.auth, tenant.agentKey.auth, { authorization: 'Bearer prl_us_x' }];
    ids = [tenant.agent.id, tenant.other.id, 'x', 'eu_0000000000000000'];
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    // As `parley serve` does: the sandbox's webhooks (POST /api/sandbox/inbound) go to this app,
    // else a valid inbound is the documented 502 "no webhook address" (a 5xx the run would count).
    t.ctx.messaging.attachServer(`http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    await agent.close();
    await t?.close();
  });

  it(`answers ${REQUESTS} requests as documented: no 5xx, no reset, each error in its envelope (seed ${SEED})`, async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as OpenApiDocument;
    const resolve = resolver((doc.components?.schemas ?? {}) as Record<string, Record<string, unknown>>);
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
    );
    expect(operations.length).toBeGreaterThan(15);
    const rand = prng(SEED);
    const f: Figures = { sent: 0, overHttp: 0, fiveXx: [], resets: [], undeclared: [], envelope: [], statuses: {} };
    const started = Date.now();

    for (let i = 0; i < REQUESTS; i++) {
      const chosen = operations[i % operations.length];
      if (!chosen) throw new Error('no operation');
      const { path, method: documented, op } = chosen;
      const method = documented === 'GET' && rand() < 0.1 ? 'HEAD' : documented;
      let url = path.replace(/\{[^}]+\}/g, () => pathValue(rand, ids));
      const params = (op.parameters ?? []) as { name: string; in: string; schema?: Record<string, unknown> }[];
      const query = params
        .filter((p) => p.in === 'query' && rand() < 0.5)
        .map((p) => `${enc(p.name)}=${enc(String(fromSchema(rand, p.schema ?? {}, resolve)))}`);
      if (rand() < 0.05)
        query.push(`${pick(rand, ['x', 'limit', 'cursor'])}=${pick(rand, ['%00', '-1', '1e999', '%ZZ'])}`);
      if (path === '/webhooks/msgapp' && method === 'GET' && rand() < 0.5)
        query.push('hub.mode=subscribe', 'hub.verify_token=verify-me');
      if (query.length > 0) url += `?${query.join('&')}`;

      const headers: Record<string, string> = { ...pick(rand, keys) };
      let payload: string | Buffer | undefined;
      const bodySchema = (
        op.requestBody as { content?: Record<string, { schema?: Record<string, unknown> }> } | undefined
      )?.content?.['application/json']?.schema;
      const r = rand();
      if (bodySchema && r < 0.75) payload = JSON.stringify(fromSchema(rand, bodySchema, resolve));
      else if ((bodySchema && r < 0.97) || (!bodySchema && r < 0.08)) payload = pick(rand, MALFORMED);
      if (payload !== undefined)
        headers['content-type'] = rand() < 0.85 ? 'application/json' : pick(rand, CONTENT_TYPES);
      if (rand() < 0.15) headers['idempotency-key'] = `k${Math.floor(rand() * 50)}`;
      if (method === 'HEAD') payload = undefined;

      const what = `${method} ${url} ${String(payload ?? '').slice(0, 160)}`;
      let res: { statusCode: number; body: string; headers: Record<string, unknown>; json(): unknown };
      if (rand() < OVER_HTTP) {
        f.overHttp++;
        try {
          const answer = await request(`http://127.0.0.1:${port}${url}`, {
            method: method as 'GET',
            headers,
            dispatcher: agent,
            ...(payload !== undefined ? { body: payload } : {}),
          });
          const body = await answer.body.text();
          res = {
            statusCode: answer.statusCode,
            body,
            headers: answer.headers,
            json: () => JSON.parse(body) as unknown,
          };
        } catch (err) {
          f.resets.push(`${what}: ${(err as Error).message}`);
          continue;
        }
      } else {
        const injected = await t.app.inject({
          method: method as 'GET',
          url,
          headers,
          ...(payload !== undefined ? { payload } : {}),
        });
        res = {
          statusCode: injected.statusCode,
          body: injected.body,
          headers: injected.headers,
          json: () => injected.json(),
        };
      }
      f.sent++;
      f.statuses[res.statusCode] = (f.statuses[res.statusCode] ?? 0) + 1;
      if (res.statusCode >= 500) f.fiveXx.push(`${res.statusCode} ${what}`);
      const violation = documentedResponseViolation(t.app, method, url, res);
      if (violation) f.undeclared.push(`${what}\n  ${violation.split('\n').slice(0, 4).join('\n  ')}`);
      if (res.statusCode >= 400 && method !== 'HEAD') {
        let answer: unknown;
        try {
          answer = res.json();
        } catch {
          answer = res.body;
        }
        const ok =
          familyOfUrl(url) === 'channel'
            ? typeof answer === 'object' && answer !== null && (answer as { success?: unknown }).success === false
            : typeof (answer as { code?: unknown })?.code === 'string';
        if (!ok || typeof (answer as { error?: unknown })?.error !== 'string')
          f.envelope.push(`${what} → ${res.body.slice(0, 200)}`);
      }
    }

    const seconds = (Date.now() - started) / 1000;
    // The figures of the run, for a long run's note.
    process.stdout.write(
      `fuzz ${dialect} seed ${SEED}: ${f.sent + f.resets.length} requests (${f.overHttp} over HTTP) in ${seconds.toFixed(1)} s; ` +
        `5xx ${f.fiveXx.length}, resets ${f.resets.length}, undeclared ${f.undeclared.length}, outside the envelope ${f.envelope.length}; ` +
        `statuses ${JSON.stringify(f.statuses)}\n`,
    );
    expect(f.fiveXx.slice(0, 5)).toEqual([]);
    expect(f.resets.slice(0, 5)).toEqual([]);
    expect(f.undeclared.slice(0, 5)).toEqual([]);
    expect(f.envelope.slice(0, 5)).toEqual([]);
    expect(f.sent).toBe(REQUESTS);
  });

  /** Framing no client library sends; each answered (a 4xx in the coded envelope) and closed, never reset. */
  const FRAMING: [string, string | Buffer][] = [
    ['not HTTP', 'GARBAGE\r\n\r\n'],
    [
      'both Content-Length and chunked',
      'POST /api/endusers HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    [
      'a broken chunk',
      'POST /api/endusers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
    ],
    ['a Content-Length that is not a number', 'POST /api/endusers HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'],
    [
      'two Content-Lengths',
      'POST /api/endusers HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
    ],
    ['an unknown HTTP version', 'GET /api/health HTTP/9.9\r\nHost: x\r\n\r\n'],
    ['a NUL in a header', 'GET /api/health HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n'],
    ['headers over the limit', `GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
    ['no Host', 'GET /api/health HTTP/1.1\r\n\r\n'],
    ['a space in the path', 'GET /api/ health HTTP/1.1\r\nHost: x\r\n\r\n'],
    [
      'invalid UTF-8 in the path',
      Buffer.concat([
        Buffer.from('GET /api/endusers/'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n'),
      ]),
    ],
  ];

  it.each(FRAMING)('bad framing, %s: a 4xx in the coded envelope, then closed, never reset', async (_name, bytes) => {
    const { text, reset } = await rawExchange(port, bytes);
    expect(reset, text).toBe(false);
    const [answer] = parseAnswers(text);
    expect(answer?.status, text.slice(0, 300)).toBeGreaterThanOrEqual(400);
    expect(answer?.status).toBeLessThan(500);
    expect(JSON.parse(answer?.body ?? '')).toMatchObject({ error: expect.any(String), code: expect.any(String) });
  });

  it('HEAD with headers over the limit: the status and headers, no body', async () => {
    const { text, reset } = await rawExchange(
      port,
      `HEAD /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(reset).toBe(false);
    expect(text).toMatch(/^HTTP\/1\.1 431 /);
    expect(text.endsWith('\r\n\r\n')).toBe(true);
  });
});
