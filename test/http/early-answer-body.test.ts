import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { makeKey, makeOrg } from '../helpers/factories.js';
import { parseAnswers } from '../helpers/fuzz.js';
import { until } from '../helpers/wait.js';

/**
 * A GET or DELETE carrying a body, answered early (a bad key, an unknown route, a body refused),
 * must not leave its body in the connection: the next request on that socket is served, or the
 * early answer says `Connection: close` and the connection ends cleanly (never a reset). Raw
 * sockets, as the probe used, with bodies small and larger than the socket buffers (2 MB), sent
 * pipelined (both requests at once) and one after the other. The HTTP layer is the same on either
 * database: SQLite only.
 */
describe('a request body left unread by an early answer (sqlite)', () => {
  let t: TestApp;
  let port: number;
  let goodKey: string;

  beforeAll(async () => {
    t = await createTestApp('sqlite');
    const org = await makeOrg(t.ctx);
    goodKey = (await makeKey(t.ctx, org.id, { permissions: ['endusers'] })).key;
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await t?.close();
  });

  interface Outcome {
    text: string;
    reset: boolean;
    closed: boolean;
  }

  /** Sends the first request, then (pipelined or after its answer) a second one; collects everything. */
  async function exchange(first: Buffer, second: string, pipelined: boolean): Promise<Outcome> {
    const socket: Socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const state = { reset: false, closed: false };
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') state.reset = true;
    });
    socket.on('close', () => {
      state.closed = true;
    });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const text = () => Buffer.concat(chunks).toString('latin1');
    socket.write(pipelined ? Buffer.concat([first, Buffer.from(second)]) : first);
    if (!pipelined) {
      await until(() => parseAnswers(text()).length >= 1 || state.closed, 'the first answer', 15_000);
      if (!state.closed) socket.write(second);
    }
    await until(() => parseAnswers(text()).length >= 2 || state.closed, 'the second answer or the close', 15_000);
    socket.destroy();
    return { text: text(), reset: state.reset, closed: state.closed };
  }

  const request = (method: string, url: string, auth: string, body: Buffer) =>
    Buffer.concat([
      Buffer.from(
        `${method} ${url} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nAuthorization: Bearer ${auth}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      ),
      body,
    ]);
  const HEALTH = 'GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n';
  const small = Buffer.from(JSON.stringify({ name: 'x'.repeat(80) }));
  const large = Buffer.from(JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }));

  const cases = [
    ['GET', '/api/endusers/eu_x', 'bad', 401],
    ['DELETE', '/api/endusers/eu_x', 'bad', 401],
    ['GET', '/api/nothing/here', 'bad', 404],
    ['DELETE', '/api/nothing/here', 'bad', 404],
    ['DELETE', '/api/endusers/eu_x', 'good', 0],
  ] as const;

  for (const [method, url, auth, status] of cases) {
    for (const [size, body] of [
      ['small', small],
      ['2 MB', large],
    ] as const) {
      for (const pipelined of [true, false]) {
        it(`${method} ${url} (${auth} key, ${size} body, ${pipelined ? 'pipelined' : 'one after the other'}): the next request is served, or the connection closes cleanly`, async () => {
          const outcome = await exchange(
            request(method, url, auth === 'good' ? goodKey : 'prl_us_bad', body),
            HEALTH,
            pipelined,
          );
          const answers = parseAnswers(outcome.text);
          expect(outcome.reset, outcome.text.slice(0, 400)).toBe(false);
          const [early, next] = answers;
          expect(early?.status).toBeGreaterThanOrEqual(400);
          expect(early?.status).toBeLessThan(500);
          if (status !== 0) expect(early?.status).toBe(status);
          if (/\r\nconnection: close/i.test(early?.headers ?? '')) {
            expect(next).toBeUndefined();
            expect(outcome.closed).toBe(true);
          } else {
            expect(next?.status, outcome.text.slice(0, 600)).toBe(200);
            expect(JSON.parse(next?.body ?? '{}')).toMatchObject({ status: 'ok' });
          }
        }, 40_000);
      }
    }
  }
});
