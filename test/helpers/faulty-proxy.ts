import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What a proxy in front of Parley does to one request:
 * - `502` / `503`: answers that status itself, as a balancer with no healthy upstream does;
 * - `reset`: drops the connection before forwarding (the request never reaches Parley);
 * - `lost-answer`: forwards the request, then drops the connection instead of relaying the answer
 *   (Parley did the work; the caller never hears of it).
 */
export type Fault = '502' | '503' | 'reset' | 'lost-answer';

export interface ProxiedRequest {
  readonly method: string;
  readonly path: string;
  readonly idempotencyKey: string | undefined;
  /** The fault applied to it, if any. */
  readonly fault: Fault | undefined;
  /** What Parley answered when the request reached it. */
  upstreamStatus?: number;
  upstreamBody?: string;
}

const FORWARDED = ['authorization', 'content-type', 'accept', 'idempotency-key', 'x-request-id'];

/** A real HTTP proxy to `target` that applies the queued faults to the next requests, in order. */
export async function startFaultyProxy(target: string): Promise<{
  url: string;
  faults: Fault[];
  requests: ProxiedRequest[];
  close(): Promise<void>;
}> {
  const faults: Fault[] = [];
  const requests: ProxiedRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const key = req.headers['idempotency-key'];
    const fault = faults.shift();
    const seen: ProxiedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      idempotencyKey: typeof key === 'string' ? key : undefined,
      fault,
    };
    requests.push(seen);
    if (fault === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault === '502' || fault === '503') {
      res.writeHead(Number(fault), { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: false, error: 'No upstream is available.' }));
      return;
    }
    const headers: Record<string, string> = {};
    for (const name of FORWARDED) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const upstream = await fetch(target + seen.path, {
      method: seen.method,
      headers,
      ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
    });
    const body = await upstream.text();
    seen.upstreamStatus = upstream.status;
    seen.upstreamBody = body;
    if (fault === 'lost-answer') {
      req.socket.destroy();
      return;
    }
    const out: Record<string, string> = { 'content-type': upstream.headers.get('content-type') ?? 'application/json' };
    for (const name of ['retry-after', 'x-request-id']) {
      const value = upstream.headers.get(name);
      if (value !== null) out[name] = value;
    }
    res.writeHead(upstream.status, out);
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    faults,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
