/**
 * POST /api/media with one large document: how much Parley's resident memory grows while it takes
 * the upload (goal: under 50 MB for 100 MB, the file streamed to the media store, never whole in
 * memory), and how fast. One server (`parley serve`, SQLite, the folder store), its RSS read from
 * /proc every 20 ms from before the upload to its answer. The file is written to a temporary
 * folder and streamed from the disk, so this process holds none of it either.
 *
 *   npm run build && node --import tsx bench/upload-rss.ts --dist            # 100 MB, about 10 s
 *   node --import tsx bench/upload-rss.ts --dist --mb 100 --rounds 3         # bigger: three uploads
 */
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import {
  entry,
  freePort,
  log,
  messagingBenchEnv,
  seedSendingTenant,
  spawnNode,
  stopChild,
  waitUp,
} from './child-server.js';

const { values: args } = parseArgs({
  options: {
    mb: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '1' },
    dist: { type: 'boolean', default: false },
  },
});
const MB = 1024 * 1024;
const SIZE = Math.round(Number(args.mb) * MB);
const ROUNDS = Number(args.rounds);
const ENTRY = entry(args.dist);

const rssMb = (pid: number | undefined) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN) / 1024;

/** A PDF of `size` bytes on the disk: its header, blanks, its end. */
async function writePdf(path: string, size: number): Promise<void> {
  const head = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\n');
  const tail = Buffer.from('\ntrailer<<>>\n%%EOF\n');
  const blank = Buffer.alloc(MB, 0x20);
  async function* chunks() {
    yield head;
    let left = size - head.length - tail.length;
    while (left > 0) {
      const n = Math.min(left, blank.length);
      yield blank.subarray(0, n);
      left -= n;
    }
    yield tail;
  }
  await pipeline(Readable.from(chunks()), createWriteStream(path));
}

/** The multipart body of one upload, streamed from the file, and its exact length. */
function multipart(path: string, size: number) {
  const boundary = '----parleybench';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* parts() {
    yield head;
    for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 })) yield chunk as Buffer;
    yield tail;
  }
  return {
    body: Readable.from(parts()),
    length: head.length + size + tail.length,
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

async function main() {
  const folder = mkdtempSync(join(tmpdir(), 'parley-upload-'));
  const file = join(folder, 'big.pdf');
  const port = await freePort();
  const { env, cleanup } = messagingBenchEnv('sqlite', 'upload', 'http://127.0.0.1:1');
  delete env.PARLEY_PROVIDER_BASE_URL; // the built-in sandbox: nothing here calls the provider
  try {
    log(`writing a ${SIZE / MB} MB PDF`);
    await writePdf(file, SIZE);
    const tenant = await seedSendingTenant(args.dist, env);
    const parley = spawnNode([...ENTRY, 'serve', '--port', String(port)], env);
    const base = `http://127.0.0.1:${port}`;
    try {
      await waitUp(`${base}/api/health`, parley);
      const upload = async (path: string, size: number) => {
        const form = multipart(path, size);
        const res = await request(`${base}/api/media`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${tenant.key}`,
            'content-type': form.type,
            'content-length': String(form.length),
          },
          body: form.body,
          headersTimeout: 300_000,
          bodyTimeout: 300_000,
        });
        const text = await res.body.text();
        if (res.statusCode !== 201) throw new Error(`upload answered ${res.statusCode}: ${text}`);
      };
      // One small upload first: the route, the sniffer and the store loaded, as on a server in use.
      const small = join(folder, 'small.pdf');
      await writePdf(small, 64 * 1024);
      await upload(small, 64 * 1024);
      for (let round = 1; round <= ROUNDS; round++) {
        const before = rssMb(parley.pid);
        let peak = before;
        const timer = setInterval(() => {
          peak = Math.max(peak, rssMb(parley.pid));
        }, 20);
        const started = performance.now();
        await upload(file, SIZE);
        const ms = performance.now() - started;
        clearInterval(timer);
        peak = Math.max(peak, rssMb(parley.pid));
        const growth = peak - before;
        log(
          `round ${round}: ${SIZE / MB} MB in ${(ms / 1000).toFixed(1)} s (${((SIZE / MB / ms) * 1000).toFixed(0)} MB/s); ` +
            `RSS ${before.toFixed(0)} → peak ${peak.toFixed(0)} MB: grew ${growth.toFixed(1)} MB ` +
            `(goal under 50 MB: ${growth < 50 ? 'met' : 'not met'})`,
        );
      }
    } finally {
      await stopChild(parley);
    }
  } finally {
    await cleanup();
    rmSync(folder, { recursive: true, force: true });
  }
}

await main();
