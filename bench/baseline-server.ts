/**
 * The baseline of the benchmarks: a bare node:http server answering a fixed JSON body, so the cost
 * of Parley's own stack can be read as a ratio to it.
 *
 *   node --import tsx bench/baseline-server.ts 4000      # listens on 127.0.0.1:4000
 *
 * Prints `listening <port>` on stdout once ready (port 0 picks a free one). Import
 * `startBaselineServer` to run it in-process instead.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

const BODY = JSON.stringify({ status: 'ok' });

export function startBaselineServer(port = 0, host = '127.0.0.1'): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(BODY),
    });
    res.end(BODY);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve({ server, port: (server.address() as AddressInfo).port }));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.argv[2] ?? process.env.PORT ?? 0);
  const { server, port: actual } = await startBaselineServer(port);
  process.stdout.write(`listening ${actual}\n`);
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
