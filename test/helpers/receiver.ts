import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A local receiver: answers each path from a script of statuses (the last one repeats). */
export async function startReceiver(): Promise<{
  url: string;
  received: Received[];
  script(path: string, statuses: number[]): void;
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const scripts = new Map<string, number[]>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body });
      const script = scripts.get(path) ?? [200];
      const status = script.length > 1 ? (script.shift() ?? 200) : (script[0] ?? 200);
      if (status >= 300 && status < 400) res.setHeader('location', '/redirected');
      res.writeHead(status).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    script: (path, statuses) => scripts.set(path, [...statuses]),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
