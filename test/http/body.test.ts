import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';

/**
 * Bodies of any shape within the size limit get an answer in the route's envelope, never a 5xx:
 * deep nesting (hundreds of thousands of levels fit in 1 MB) with and without a NUL character.
 */
describe.each(DIALECTS)('deeply nested bodies (%s)', (dialect) => {
  let t: TestApp;
  let auth: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp(dialect);
    auth = (await makeTenant(t.ctx)).orgKey.auth;
  });
  afterAll(async () => {
    await t.close();
  });

  const shapes = (depth: number, leaf: string) => ({
    array: `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`,
    'object in a field': `{"origin":"manual","name":${'{"a":'.repeat(depth)}${leaf}${'}'.repeat(depth)}}`,
    'arrays in a field': `{"origin":"manual","tags":${'['.repeat(depth)}${leaf}${']'.repeat(depth)}}`,
  });
  const routes = [
    { url: '/api/endusers', family: 'coded' },
    { url: '/api/endusers/batch', family: 'coded' },
    { url: '/api/channels/send', family: 'channel' },
  ] as const;

  for (const nul of [true, false]) {
    it(`is a 400 in the route's envelope, ${nul ? 'with' : 'without'} a NUL at the bottom`, async () => {
      const leaf = nul ? '"x\\u0000"' : '"x"';
      for (const depth of [2_000, 150_000]) {
        for (const [shape, payload] of Object.entries(shapes(depth, leaf))) {
          for (const { url, family } of routes) {
            const res = await t.app.inject({
              method: 'POST',
              url,
              headers: { ...auth, 'content-type': 'application/json' },
              payload,
            });
            const what = `${url} ${shape} at depth ${depth}`;
            expect(res.statusCode, what).toBe(400);
            const body = res.json();
            if (family === 'channel') expect(body, what).toEqual({ success: false, error: expect.any(String) });
            else expect(body, what).toMatchObject({ error: expect.any(String), code: 'INVALID_BODY' });
            expect(res.body.length, `${what}: the sentence stays short`).toBeLessThan(1_000);
          }
        }
      }
    });
  }
});
