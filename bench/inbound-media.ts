/**
 * Inbound media: how many 1 MB photos a second Parley takes in through the sandbox (the provider's
 * webhook, the download of each file from the sandbox's media endpoints into the media store, the
 * signed `message.received` at the agent's hook), with Parley's RSS before and after; and the time
 * from the provider's webhook to `message.received` for one photo at a time (p50, p99). Beside
 * them, the same for text messages (the floor the photos add to). SQLite, and PostgreSQL when
 * DATABASE_URL is set; the folder store.
 *
 *   npm run build && node --import tsx bench/inbound-media.ts --dist
 *   node --import tsx bench/inbound-media.ts --photos 40 --rounds 20      # smoke run
 *
 * The sandbox runs in this process as the provider (PARLEY_PROVIDER_BASE_URL): it keeps every
 * photo in memory first, then this process posts the signed webhooks naming them, so the clock
 * starts when a webhook leaves, as the provider's would.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import {
  dialectsArg,
  entry,
  freePort,
  log,
  messagingBenchEnv,
  parleyJson,
  quantile,
  spawnNode,
  stopChild,
  waitUp,
} from './child-server.js';
import { providerJson, signBody, startSandbox, systemClock } from './internals.js';

const { values: args } = parseArgs({
  options: {
    photos: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '100' },
    size: { type: 'string', default: String(1024 * 1024) },
    concurrency: { type: 'string', default: '8' },
    dialects: { type: 'string' },
    dist: { type: 'boolean', default: false },
  },
});
const PHOTOS = Number(args.photos);
const ROUNDS = Number(args.rounds);
const SIZE = Number(args.size);
const CONCURRENCY = Number(args.concurrency);
const ENTRY = entry(args.dist);

/** The agent's hook: notes when each message's event arrives. */
async function startHook() {
  const arrived = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', () => {
      res.writeHead(204).end();
      const event = JSON.parse(body) as { type: string; data: { messageId: string; media?: { available: boolean } } };
      if (event.type !== 'message.received') return;
      if (event.data.media && !event.data.media.available) throw new Error(`a photo was not stored: ${body}`);
      arrived.set(event.data.messageId, performance.now());
      waiters.get(event.data.messageId)?.();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrived,
    waitFor: (id: string) =>
      new Promise<void>((resolve) => {
        if (arrived.has(id)) return resolve();
        waiters.set(id, () => {
          waiters.delete(id);
          resolve();
        });
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const rssMb = (pid: number | undefined) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN) / 1024;

interface Result {
  dialect: string;
  photosPerSecond: number;
  mbPerSecond: number;
  rssBefore: number;
  rssAfter: number;
  photoP50: number;
  photoP99: number;
  textP50: number;
  textP99: number;
}

async function runDialect(dialect: 'sqlite' | 'postgres'): Promise<Result> {
  const sandboxPort = await freePort();
  const parleyPort = await freePort();
  const { env, cleanup } = messagingBenchEnv(dialect, 'media', `http://127.0.0.1:${sandboxPort}`);
  env.PARLEY_WEBHOOK_ALLOW_PRIVATE = 'true';
  const hook = await startHook();
  const sandbox = await startSandbox({
    clock: systemClock,
    appSecret: env.PARLEY_WEBHOOK_APP_SECRET ?? '',
    port: sandboxPort,
    statuses: false,
  });
  const children: ChildProcess[] = [];
  try {
    log(`${dialect}: seeding an organization, an agent with a number and its hook`);
    const org = await parleyJson<{ id: string }>(
      args.dist,
      ['org', 'create', '--name', 'Bench', '--plan', 'paid'],
      env,
    );
    const agent = await parleyJson<{ id: string }>(
      args.dist,
      ['agent', 'create', '--org', org.id, '--name', 'Bench', '--number', '+16505550143'],
      env,
    );
    const numbers = await parleyJson<{ phoneNumberId: string }[]>(args.dist, ['number', 'list', '--org', org.id], env);
    const phoneNumberId = numbers[0]?.phoneNumberId ?? '';
    await parleyJson(args.dist, ['endpoint', 'create', '--org', org.id, '--agent', agent.id, '--url', hook.url], env);
    const parley = spawnNode([...ENTRY, 'serve', '--port', String(parleyPort)], env);
    children.push(parley);
    const base = `http://127.0.0.1:${parleyPort}`;
    await waitUp(`${base}/api/health`, parley);
    const pool = new Pool(base, { connections: CONCURRENCY });
    let n = 0;

    /** Posts the provider's webhook of one message (a photo the sandbox keeps, or text); resolves with its ID. */
    const post = async (photo: { id: string; sha256: string } | undefined) => {
      const i = n++;
      const wamid = `wamid.bench${dialect}${i}`;
      const from = `1415556${String(i % 10_000).padStart(4, '0')}`;
      const message = photo
        ? { type: 'image', image: { id: photo.id, mime_type: 'image/jpeg', sha256: photo.sha256 } }
        : { type: 'text', text: { body: 'hi' } };
      const body = providerJson({
        object: 'whatsapp_business_account',
        entry: [
          {
            id: 'bench-waba',
            changes: [
              {
                field: 'messages',
                value: {
                  messaging_product: 'whatsapp',
                  metadata: { display_phone_number: '16505550143', phone_number_id: phoneNumberId },
                  contacts: [{ profile: { name: `User ${i}` }, wa_id: from }],
                  messages: [{ from, id: wamid, timestamp: String(Math.floor(Date.now() / 1000)), ...message }],
                },
              },
            ],
          },
        ],
      });
      const started = performance.now();
      const res = await pool.request({
        path: '/webhooks/msgapp',
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-hub-signature-256': signBody(env.PARLEY_WEBHOOK_APP_SECRET ?? '', body),
        },
        body,
      });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`webhook answered ${res.statusCode}`);
      return { wamid, started };
    };
    const photo = () => {
      const file = sandbox.media.put(randomBytes(SIZE), 'image/jpeg');
      return { id: file.id, sha256: file.sha256 };
    };

    const oneAtATime = async (kind: 'photo' | 'text') => {
      const latencies: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const { wamid, started } = await post(kind === 'photo' ? photo() : undefined);
        await hook.waitFor(wamid);
        latencies.push((hook.arrived.get(wamid) ?? started) - started);
      }
      return latencies.sort((a, b) => a - b);
    };
    log(`${dialect}: ${ROUNDS} text messages, then ${ROUNDS} photos of ${SIZE} bytes, one at a time`);
    const text = await oneAtATime('text');
    const photos = await oneAtATime('photo');

    log(`${dialect}: ${PHOTOS} photos of ${SIZE} bytes, ${CONCURRENCY} webhooks at a time, until the last event`);
    const files = Array.from({ length: PHOTOS }, photo);
    const rssBefore = rssMb(parley.pid);
    const ids: string[] = [];
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < files.length) ids.push((await post(files[next++])).wamid);
      }),
    );
    await Promise.all(ids.map((id) => hook.waitFor(id)));
    const seconds = (performance.now() - started) / 1000;
    const rssAfter = rssMb(parley.pid);
    await pool.close();
    return {
      dialect,
      photosPerSecond: PHOTOS / seconds,
      mbPerSecond: (PHOTOS * SIZE) / (1024 * 1024) / seconds,
      rssBefore,
      rssAfter,
      photoP50: quantile(photos, 0.5),
      photoP99: quantile(photos, 0.99),
      textP50: quantile(text, 0.5),
      textP99: quantile(text, 0.99),
    };
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    await sandbox.close();
    await hook.close();
    await cleanup();
  }
}

const results: Result[] = [];
for (const dialect of dialectsArg(args.dialects)) results.push(await runDialect(dialect));

const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
console.log(
  `\n### Inbound media: ${PHOTOS} photos of ${SIZE} bytes at ${CONCURRENCY} at a time; ${ROUNDS} rounds one at a time\n`,
);
console.log(
  '| database | photos/s | MB/s | Parley RSS before → after, MB | webhook → message.received, photo p50 / p99 ms | text p50 / p99 ms |',
);
console.log('| - | -: | -: | -: | -: | -: |');
for (const r of results) {
  console.log(
    `| ${r.dialect} | ${f(r.photosPerSecond)} | ${f(r.mbPerSecond)} | ${f(r.rssBefore)} → ${f(r.rssAfter)} | ${f(r.photoP50)} / ${f(r.photoP99)} | ${f(r.textP50)} / ${f(r.textP99)} |`,
  );
}
