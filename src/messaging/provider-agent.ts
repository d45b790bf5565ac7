import { Agent } from 'undici';

/**
 * A keep-alive connection pool to the provider, `connections` sockets at most, never pipelined (one
 * slow answer blocks nothing else). `timeoutMs` bounds each wait (connecting, the answer's headers,
 * any pause in its body: a 100 MB document takes as long as it takes) with undici's own timers: an
 * AbortSignal per request cost a timer, a listener and a finalizer each. Sends, media and the other
 * requests each have a pool of their own, so a long download never holds a connection a send needs.
 */
export function providerAgent(timeoutMs: number, connections: number): Agent {
  return new Agent({
    keepAliveTimeout: 30_000,
    connections,
    pipelining: 1,
    connect: { timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
}
