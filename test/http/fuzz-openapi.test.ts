import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { familyOfUrl } from '../../src/http/errors.js';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeSendingTenant } from '../helpers/messaging.js';

/** A small seeded generator (mulberry32), so a failing run can be repeated exactly. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const PER_OPERATION = Number(process.env.FUZZ_PER_OPERATION ?? 200);

const STRINGS = [
  '',
  ' ',
  'a',
  'msgapp',
  'template',
  'message',
  'manual',
  'imported',
  'inbound',
  '+14155550100',
  '14155550100',
  'en_US',
  'x'.repeat(5000),
  '\u0000',
  'é✓😀',
  '<script>',
  "'; drop table end_users; --",
  '__proto__',
  '../../etc/passwd',
  '%00',
  'null',
  '1e309',
];
const FIELDS = [
  'channel',
  'to',
  'type',
  'convId',
  'template',
  'message',
  'text',
  'name',
  'language',
  'parameters',
  'body',
  'header',
  'origin',
  'email',
  'phone',
  'tags',
  'endUsers',
  'consent',
  'channelIdentifiers',
  'from',
  'limit',
  'cursor',
  'constructor',
  'prototype',
];

function value(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 3 || r < 0.35) return STRINGS[Math.floor(rand() * STRINGS.length)];
  if (r < 0.45) return Math.floor(rand() * 2 ** 40) * (rand() < 0.5 ? -1 : 1);
  if (r < 0.5) return rand() < 0.5;
  if (r < 0.55) return null;
  if (r < 0.65) return 1.5e308 * (rand() < 0.5 ? 10 : 1);
  if (r < 0.8) return Array.from({ length: Math.floor(rand() * 4) }, () => value(rand, depth + 1));
  const out: Record<string, unknown> = {};
  for (let i = Math.floor(rand() * 5); i > 0; i--)
    out[FIELDS[Math.floor(rand() * FIELDS.length)] ?? 'x'] = value(rand, depth + 1);
  return out;
}

/** A body: mostly JSON objects near the expected shapes, sometimes not JSON at all. */
function body(rand: () => number): string | undefined {
  const r = rand();
  if (r < 0.1) return undefined;
  if (r < 0.2)
    return ['{', '[1,', '"unterminated', '{"a":1}}', 'not json', '\u0000', '{"__proto__":{"x":1}}'][
      Math.floor(rand() * 7)
    ];
  const v = value(rand, 0);
  const text = JSON.stringify(typeof v === 'object' && v !== null && rand() < 0.8 ? v : { v });
  return text;
}

const pathValue = (rand: () => number) =>
  encodeURIComponent(String(STRINGS[Math.floor(rand() * STRINGS.length)] || 'x')).slice(0, 300) || 'x';

describe.each(DIALECTS)('fuzz every operation of /api/openapi.json (%s)', (dialect) => {
  let t: TestApp;
  let keys: Record<string, string>[];

  beforeAll(async () => {
    t = await createTestApp(dialect, {
      env: { PARLEY_SEND_RATE_LIMIT: '1000000', PARLEY_SEND_RATE_LIMIT_ORG: '1000000' },
    });
    const tenant = await makeSendingTenant(t.ctx);
    keys = [{}, tenant.orgKey.auth, tenant.agentKey.auth, { authorization: 'Bearer prl_us_nonsense' }];
  });
  afterAll(async () => {
    await t.close();
  });

  it(`answers ${PER_OPERATION} random requests per operation without a 5xx, each in its envelope (seed ${SEED})`, async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as {
      paths: Record<string, Record<string, unknown>>;
    };
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => ({ path, method: method.toUpperCase() })),
    );
    expect(operations.length).toBeGreaterThan(10);
    const rand = prng(SEED);
    let sent = 0;
    for (const { path, method } of operations) {
      for (let i = 0; i < PER_OPERATION; i++) {
        const url = path.replace(/\{[^}]+\}/g, () => pathValue(rand));
        const query = rand() < 0.4 ? `?${FIELDS[Math.floor(rand() * FIELDS.length)]}=${pathValue(rand)}` : '';
        const payload = method === 'GET' || method === 'DELETE' ? (rand() < 0.1 ? body(rand) : undefined) : body(rand);
        const headers: Record<string, string> = { ...(keys[Math.floor(rand() * keys.length)] ?? {}) };
        if (payload !== undefined) {
          headers['content-type'] =
            rand() < 0.9 ? 'application/json' : (['text/plain', 'application/xml', ''][Math.floor(rand() * 3)] ?? '');
        }
        if (rand() < 0.2) headers['idempotency-key'] = pathValue(rand);
        const res = await t.app.inject({
          method: method as 'GET',
          url: `${url}${query}`,
          headers,
          ...(payload !== undefined ? { payload } : {}),
        });
        sent++;
        const what = `${method} ${url}${query} ${payload?.slice(0, 200) ?? ''}`;
        expect(res.statusCode, what).toBeLessThan(500);
        if (res.statusCode >= 400 && path !== '/webhooks/msgapp') {
          const answer = res.json();
          if (familyOfUrl(url) === 'channel')
            expect(answer, what).toEqual({ success: false, error: expect.any(String) });
          else expect(answer, what).toMatchObject({ error: expect.any(String), code: expect.any(String) });
        }
      }
    }
    expect(sent).toBe(operations.length * PER_OPERATION);
  }, 300_000);
});
