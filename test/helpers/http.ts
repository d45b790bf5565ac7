import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { TestApp } from './app.js';

export interface HttpRequest {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';
  /** Path and query, e.g. `/api/conversations?status=open`. */
  readonly url: string;
  readonly headers?: Record<string, string | undefined>;
  /** An object is sent as JSON (with its content type); a string or Buffer as it is. */
  readonly payload?: unknown;
}

/** What a test reads of an answer: the fields of Fastify's inject response that the tests use. */
export interface HttpResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly payload: string;
  /** Parsed JSON, loosely typed as inject's is (tests assert its shape). */
  // biome-ignore lint/suspicious/noExplicitAny: the same contract as Fastify's inject response
  json<T = any>(): T;
}

/** One request over a real socket to `base` (http://host:port). */
export function overHttp(base: string, req: HttpRequest): Promise<HttpResponse> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers ?? {}))
    if (value !== undefined) headers[name.toLowerCase()] = value;
  let body: Buffer | undefined;
  if (req.payload !== undefined) {
    if (typeof req.payload === 'string' || Buffer.isBuffer(req.payload)) {
      body = Buffer.from(req.payload);
    } else {
      body = Buffer.from(JSON.stringify(req.payload));
      headers['content-type'] ??= 'application/json';
    }
    headers['content-length'] = String(body.length);
  }
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(new URL(req.url, base), { method: req.method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          statusCode: res.statusCode ?? 0,
          headers: res.headers,
          body: text,
          payload: text,
          json: <T>() => JSON.parse(text) as T,
        });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** A request to a test app: over a real socket when it listens (`url`), else through Fastify's inject. */
export function call(t: TestApp & { readonly url?: string }, req: HttpRequest): Promise<HttpResponse> {
  if (typeof t.url === 'string') return overHttp(t.url, req);
  return t.app.inject({
    method: req.method,
    url: req.url,
    headers: Object.fromEntries(Object.entries(req.headers ?? {}).filter(([, v]) => v !== undefined)) as Record<
      string,
      string
    >,
    ...(req.payload !== undefined ? { payload: req.payload as string } : {}),
  }) as unknown as Promise<HttpResponse>;
}
