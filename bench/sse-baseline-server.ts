/**
 * The baseline of `inbox-live.ts`: a bare node:http server that holds server-sent event streams
 * (`GET /stream`) and, on `POST /poke`, writes one event to every stream: the least a server can do
 * to tell open pages of a change, so the inbox's figures can be read beside it.
 *
 *   node --import tsx bench/sse-baseline-server.ts 0     # prints `listening <port>`
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const streams = new Set<ServerResponse>();
let seq = 0;
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stream') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    res.write('retry: 1000\n\n');
    streams.add(res);
    res.on('close', () => streams.delete(res));
    return;
  }
  if (req.method === 'POST' && req.url === '/poke') {
    req.resume();
    req.on('end', () => {
      seq++;
      for (const s of streams) s.write(`id: ${seq}\nevent: changed\ndata: message\n\n`);
      res.writeHead(200).end();
    });
    return;
  }
  res.writeHead(404).end();
});
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
