import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { until } from '../helpers/wait.js';

/** Writes raw bytes on a new connection and collects everything until the server closes it. */
function exchange(port: number, bytes: string, timeoutMs = 20_000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, timeoutMs);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    socket.on('error', () => undefined);
  });
}

/** The HTTP answers in a byte stream: status line, headers (lower-cased) and body of each. */
function answers(text: string): { status: number; headers: Record<string, string>; body: string }[] {
  const out: { status: number; headers: Record<string, string>; body: string }[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    const head = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    const body = rest.slice(end + 4, end + 4 + length);
    out.push({ status: Number(head[0]?.split(' ')[1]), headers, body });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

describe('one answer per request, in the envelope, at the edges of HTTP', () => {
  let t: TestApp;
  let port: number;
  let auth: string;

  beforeAll(async () => {
    t = await createTestApp('sqlite');
    auth = (await makeTenant(t.ctx)).orgKey.auth.authorization;
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    port = typeof address === 'object' && address ? address.port : 0;
  });
  afterAll(async () => {
    await t.close();
  });

  const expectEnvelope = (a: { status: number; headers: Record<string, string>; body: string }, code: string) => {
    expect(JSON.parse(a.body)).toMatchObject({ error: expect.any(String), code });
    expect(a.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.headers['x-content-type-options']).toBe('nosniff');
    expect(a.headers['content-type']).toBe('application/json; charset=utf-8');
  };

  it('a request answered before its body fails to parse gets that one answer, and the connection closes', async () => {
    const { text, closed } = await exchange(
      port,
      'GET /api/endusers/%00 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n',
    );
    const got = answers(text);
    expect(got.map((a) => a.status)).toEqual([404]);
    expect(JSON.parse(got[0]?.body ?? '{}')).toMatchObject({ code: 'NOT_FOUND' });
    expect(closed).toBe(true);
  });

  it('a valid batch followed by garbage on the same connection gets its own answer, then the connection closes', async () => {
    const email = `garbage${Date.now()}@example.com`;
    const body = JSON.stringify({ origin: 'imported', endUsers: [{ email }] });
    const { text, closed } = await exchange(
      port,
      `POST /api/endusers/batch HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}GARBAGE NOT HTTP\r\n\r\n`,
    );
    const got = answers(text);
    expect(got.map((a) => a.status)).toEqual([200]);
    expect(JSON.parse(got[0]?.body ?? '{}')).toMatchObject({ created: 1, failed: 0 });
    expect(closed).toBe(true);
    expect(await t.ctx.db.selectFrom('end_users').select('email').where('email', '=', email).execute()).toHaveLength(1);
  });

  it('garbage alone is 400 MALFORMED_REQUEST with an X-Request-Id; over-long headers 431', async () => {
    const garbage = answers((await exchange(port, 'NOT HTTP AT ALL\r\n\r\n')).text);
    expect(garbage.map((a) => a.status)).toEqual([400]);
    expectEnvelope(garbage[0] ?? { status: 0, headers: {}, body: '{}' }, 'MALFORMED_REQUEST');
    const big = answers(
      (await exchange(port, `GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)).text,
    );
    expect(big.map((a) => a.status)).toEqual([431]);
    expectEnvelope(big[0] ?? { status: 0, headers: {}, body: '{}' }, 'HEADERS_TOO_LARGE');
  });

  it('a HEAD request refused by the parser gets the status and headers, and no body', async () => {
    for (const [request, status] of [
      [`HEAD /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
      ['HEAD /api/health HTTP/1.1\r\nHost: x\r\nBad Header: yes\r\n\r\n', 400],
    ] as const) {
      const { text, closed } = await exchange(port, request);
      expect(text).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(text.endsWith('\r\n\r\n'), `${status}: nothing after the headers`).toBe(true);
      expect(text).toMatch(/\r\ncontent-length: \d+\r\n/);
      expect(closed).toBe(true);
    }
  });

  it('no Host header: 400 in the envelope; an unknown Expect: 417; CONNECT: 405', async () => {
    const bare = await exchange(port, 'GET /api/health HTTP/1.1\r\n\r\n');
    expect(bare.closed).toBe(true);
    const noHost = answers(bare.text);
    expect(noHost[0]?.status).toBe(400);
    expectEnvelope(noHost[0] ?? { status: 0, headers: {}, body: '{}' }, 'MALFORMED_REQUEST');
    expect(JSON.parse(noHost[0]?.body ?? '{}').error).toContain('Host');

    const expectation = answers(
      (await exchange(port, 'POST /api/endusers HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}'))
        .text,
    );
    expect(expectation.map((a) => a.status)).toEqual([417]);
    expectEnvelope(expectation[0] ?? { status: 0, headers: {}, body: '{}' }, 'EXPECTATION_FAILED');

    const tunnel = await exchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    const connectAnswers = answers(tunnel.text);
    expect(connectAnswers.map((a) => a.status)).toEqual([405]);
    expectEnvelope(connectAnswers[0] ?? { status: 0, headers: {}, body: '{}' }, 'METHOD_NOT_ALLOWED');
    expect(tunnel.closed).toBe(true);

    // HTTP/1.0 needs no Host.
    const old = answers(
      (await exchange(port, 'GET /api/health HTTP/1.0\r\n\r\n')).text.replace('HTTP/1.0', 'HTTP/1.1'),
    );
    expect(old[0]?.status).toBe(200);
  });
});

describe('slow and idle clients are let go; the server stays responsive', () => {
  let t: TestApp;
  let port: number;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    t = await createTestApp('sqlite', {
      env: {
        PARLEY_HEADERS_TIMEOUT_MS: '500',
        PARLEY_REQUEST_TIMEOUT_MS: '1000',
        PARLEY_KEEP_ALIVE_TIMEOUT_MS: '1000',
        PARLEY_MAX_CONNECTIONS: '150',
      },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    port = typeof address === 'object' && address ? address.port : 0;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await t.close();
  });

  const open = (onOpen: (s: Socket) => void) =>
    new Promise<Socket>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        onOpen(s);
        resolve(s);
      });
      s.on('error', () => undefined);
      // Read whatever comes, so that the server closing the connection is seen ('close').
      s.resume();
      sockets.push(s);
    });

  it('bodies dripped a byte at a time are timed out (408) while other requests are served', async () => {
    const drips: { socket: Socket; text: string; closed: boolean }[] = [];
    const timers: NodeJS.Timeout[] = [];
    for (let i = 0; i < 100; i++) {
      const entry = { socket: undefined as unknown as Socket, text: '', closed: false };
      entry.socket = await open((s) => {
        s.write(
          'POST /webhooks/msgapp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{',
        );
        timers.push(setInterval(() => s.writable && s.write(' '), 200));
      });
      entry.socket.on('data', (d: Buffer) => {
        entry.text += d.toString();
      });
      entry.socket.on('close', () => {
        entry.closed = true;
      });
      drips.push(entry);
    }
    try {
      // Meanwhile the server answers at once.
      const health = await fetch(`http://127.0.0.1:${port}/api/health`);
      expect(health.status).toBe(200);
      await until(() => drips.every((d) => d.closed), 'every dripping connection to be closed');
    } finally {
      for (const timer of timers) clearInterval(timer);
    }
    const timedOut = drips.filter((d) => d.text.startsWith('HTTP/1.1 408'));
    expect(timedOut.length).toBeGreaterThan(0);
    for (const d of timedOut)
      expect(JSON.parse(answers(d.text)[0]?.body ?? '{}')).toMatchObject({ code: 'REQUEST_TIMEOUT' });
    expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(200);
  });

  it('headers that never end are timed out', async () => {
    let closed = false;
    const s = await open((socket) => socket.write('GET /api/health HTTP/1.1\r\nHost: x\r\nX-Slow: '));
    s.on('close', () => {
      closed = true;
    });
    await until(() => closed, 'the slow-headers connection to be closed');
  });

  it('connections over the cap are refused until some close', async () => {
    const idle: Socket[] = [];
    for (let i = 0; i < 150; i++) idle.push(await open(() => undefined));
    await until(() => t.app.server.listening, 'the server');
    let refused = false;
    const extra = await open(() => undefined);
    extra.on('close', () => {
      refused = true;
    });
    await until(() => refused, 'the connection over the cap to be closed');
    for (const s of idle) s.destroy();
    await until(async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/api/health`)).status === 200;
      } catch {
        return false;
      }
    }, 'service once the idle connections are gone');
  });
});
