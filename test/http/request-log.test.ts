import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loggableUrl } from '../../src/http/request-log.js';
import { REDACT_PATHS } from '../../src/shared/logger.js';
import { DIALECTS } from '../helpers/app.js';
import { makeKey, makeOrg } from '../helpers/factories.js';
import { createProbeApp, PROBE_CODED, PROBE_CRASH } from '../helpers/platform-probe.js';

function captureLogger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  const logger = pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, stream);
  return { logger, lines };
}

describe.each(DIALECTS)('request log lines (%s)', (dialect) => {
  it('one line per request at info, with the request ID, the status and no key', async () => {
    const logs = captureLogger('info');
    const t = await createProbeApp(dialect, { logger: logs.logger });
    try {
      const org = await makeOrg(t.ctx);
      const k = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
      const ok = await t.app.inject({
        method: 'GET',
        url: PROBE_CODED,
        headers: { ...k.auth, 'x-request-id': 'one-1' },
      });
      expect(ok.statusCode).toBe(200);
      const denied = await t.app.inject({
        method: 'GET',
        url: `${PROBE_CODED}?api_key=${k.key}&n=1`,
        headers: { authorization: `Bearer ${k.key}x`, 'x-request-id': 'one-2' },
      });
      expect(denied.statusCode).toBe(401);

      const first = logs.lines.filter((l) => l.reqId === 'one-1');
      expect(first).toEqual([
        expect.objectContaining({
          level: 30,
          msg: 'request completed',
          req: expect.objectContaining({ method: 'GET', url: PROBE_CODED }),
          res: { statusCode: 200 },
          responseTime: expect.any(Number),
        }),
      ]);
      const second = logs.lines.filter((l) => l.reqId === 'one-2');
      expect(second).toHaveLength(1);
      expect(second[0]).toMatchObject({
        res: { statusCode: 401 },
        req: { url: `${PROBE_CODED}?api_key=[redacted]&n=1` },
      });
      expect(logs.lines.some((l) => l.msg === 'incoming request')).toBe(false);
      expect(JSON.stringify(logs.lines)).not.toContain(k.key.slice(7));
    } finally {
      await t.close();
    }
  });

  it('nothing per request below the configured level; errors still logged with the request ID', async () => {
    const logs = captureLogger('warn');
    const t = await createProbeApp(dialect, { logger: logs.logger });
    try {
      const org = await makeOrg(t.ctx);
      const k = await makeKey(t.ctx, org.id, { permissions: ['endusers'] });
      for (let i = 0; i < 5; i++) {
        const res = await t.app.inject({ method: 'GET', url: PROBE_CODED, headers: k.auth });
        expect(res.statusCode).toBe(200);
      }
      // Start-up may warn (the folder media store on PostgreSQL); no line is about a request.
      expect(logs.lines.filter((l) => 'reqId' in l || 'req' in l)).toEqual([]);
      const crash = await t.app.inject({ method: 'GET', url: PROBE_CRASH, headers: { 'x-request-id': 'crash-w' } });
      expect(crash.statusCode).toBe(500);
      expect(logs.lines.filter((l) => l.reqId === 'crash-w' && l.level === 50).length).toBeGreaterThanOrEqual(1);
    } finally {
      await t.close();
    }
  });
});

describe('loggableUrl', () => {
  it('redacts secret-looking query values only', () => {
    expect(loggableUrl('/api/endusers/eu_1')).toBe('/api/endusers/eu_1');
    expect(loggableUrl('/w?hub.mode=subscribe&hub.verify_token=s3&hub.challenge=42')).toBe(
      '/w?hub.mode=subscribe&hub.verify_token=[redacted]&hub.challenge=42',
    );
    expect(loggableUrl('/x?access_token=a&Secret=b&password=c&limit=5')).toBe(
      '/x?access_token=[redacted]&Secret=[redacted]&password=[redacted]&limit=5',
    );
  });
});
