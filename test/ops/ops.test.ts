import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import {
  closedPort,
  createMessagingApp,
  type MessagingTestApp,
  makeSendingTenant,
  templateSend,
} from '../helpers/messaging.js';

describe.each(DIALECTS)('readiness (%s)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t.close();
  });

  it('is 200 when the database answers; public and documented; health stays the liveness check', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready' });
    expect(res.headers['cache-control']).toBe('no-store');
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    expect(doc.paths['/api/ready'].get.security).toEqual([]);
    expect(doc.paths['/metrics']).toBeUndefined();
    expect((await t.app.inject({ method: 'GET', url: '/api/health' })).json()).toMatchObject({ status: 'ok' });
  });

  it('is 503 with Retry-After when the configured Redis cannot be reached, naming nothing', async () => {
    const app = await createTestApp(dialect, { env: { REDIS_URL: `redis://127.0.0.1:${await closedPort()}` } });
    try {
      const res = await app.app.inject({ method: 'GET', url: '/api/ready' });
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.json()).toEqual({ status: 'unavailable' });
    } finally {
      await app.close();
    }
  });
});

describe('metrics', () => {
  let t: MessagingTestApp;
  beforeAll(async () => {
    t = await createMessagingApp('sqlite', { env: { PARLEY_METRICS: 'true', PARLEY_METRICS_TOKEN: 's3cret-scrape' } });
  });
  afterAll(async () => {
    await t.close();
  });

  const scrape = async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer s3cret-scrape' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    return res.body;
  };

  it('counts requests by route pattern and status, provider calls and jobs', async () => {
    const { agentKey } = await makeSendingTenant(t.ctx);
    expect((await t.app.inject({ method: 'GET', url: '/api/endusers/eu_nope' })).statusCode).toBe(401);
    const sent = await t.app.inject({
      method: 'POST',
      url: '/api/channels/send',
      headers: agentKey.auth,
      payload: templateSend(),
    });
    expect(sent.statusCode).toBe(200);
    await t.settle();
    const body = await scrape();
    expect(body).toMatch(
      /parley_http_requests_total\{method="GET",route="\/api\/endusers\/:endUserId",status="401",region="us"\} 1/,
    );
    expect(body).toMatch(
      /parley_http_requests_total\{method="POST",route="\/api\/channels\/send",status="200",region="us"\} 1/,
    );
    expect(body).toMatch(
      /parley_http_request_duration_seconds_bucket\{le="0\.001",region="us",method="GET",route="\/api\/endusers\/:endUserId",status="401"\}/,
    );
    expect(body).toMatch(/parley_provider_requests_total\{operation="send",outcome="ok",region="us"\} 1/);
    expect(body).toMatch(/parley_jobs\{queue="provider-webhook",state="queued",region="us"\} 0/);
    expect(body).toMatch(/parley_process_resident_memory_bytes/);
    // Raw URLs never become labels.
    expect(body).not.toContain('eu_nope');
  });

  it('needs its token when one is configured; is a plain 404 when disabled', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ code: 'UNAUTHORIZED' });
    const off = await createTestApp('sqlite');
    try {
      const none = await off.app.inject({ method: 'GET', url: '/metrics' });
      expect(none.statusCode).toBe(404);
      expect(none.json()).toMatchObject({ code: 'NOT_FOUND' });
    } finally {
      await off.close();
    }
  });
});
