/**
 * The inbox's live updates: with 50 inbox pages open, the time from a provider webhook (an inbound
 * message) to the `changed` event on each page's stream, and to each page showing the message
 * (its list fragment read again, as the page does); and the memory each open page holds on the
 * server (RSS). Beside them, in the same run, a bare node:http server telling 50 streams of a
 * change (`sse-baseline-server.ts`): the floor of the machine. SQLite, then PostgreSQL when
 * DATABASE_URL is set (there the change travels through LISTEN/NOTIFY).
 *
 *   node --import tsx bench/inbox-live.ts                 # 50 pages, 100 rounds
 *   node --import tsx bench/inbox-live.ts --pages 10 --rounds 20   # smoke run
 *   npm run build && node --import tsx bench/inbox-live.ts --dist
 *
 * RSS per open page: the server's resident memory with every page open (before the first change)
 * less what it was with none, over the number of pages.
 *
 * A "page" is what a browser's inbox tab costs the server: `GET /dashboard/inbox` once, its
 * stream (`/dashboard/inbox/stream`) open all along, and `GET /dashboard/inbox/list` after each
 * event. Every round posts one signed inbound message from a new customer; the agent has no hook,
 * so each conversation goes to people and every open list shows it.
 */
import type { ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { parseArgs } from 'node:util';
import {
  BENCH_APP_SECRET,
  entry,
  freePort,
  log,
  messagingBenchEnv,
  parleyJson,
  quantile,
  spawnNode,
  startListening,
  stopChild,
  waitUp,
} from './child-server.js';

const { values: args } = parseArgs({
  options: {
    pages: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '100' },
    dist: { type: 'boolean', default: false },
  },
});
const PAGES = Number(args.pages);
const ROUNDS = Number(args.rounds);
const PASSWORD = 'bench password 1234';

/** Resident memory of a process, in KiB (Linux). */
const rssKiB = (pid: number | undefined): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN);

/** A stream read as a page's EventSource reads it; `onEvent` for each `changed`. */
function openStream(url: string, cookie: string, onEvent: () => void): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { cookie, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          if (/^event: changed$/m.test(buffer.slice(0, end))) onEvent();
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
        }
      });
      resolve(() => req.destroy());
    });
    req.on('error', () => undefined);
    req.end();
  });
}

function inboundBody(phoneNumberId: string, wamid: string, from: string): string {
  return JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'bench-waba',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '16505550000', phone_number_id: phoneNumberId },
              contacts: [{ profile: { name: 'Bench' }, wa_id: from }],
              messages: [
                {
                  from,
                  id: wamid,
                  timestamp: String(Math.floor(Date.now() / 1000)),
                  type: 'text',
                  text: { body: 'hi' },
                },
              ],
            },
          },
        ],
      },
    ],
  });
}

/** Signs in as a browser does: the sign-in page's CSRF cookie and field, then the form. */
async function signIn(base: string, email: string): Promise<string> {
  const page = await fetch(`${base}/dashboard/login`);
  const loginCookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  const res = await fetch(`${base}/dashboard/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: loginCookie },
    body: new URLSearchParams({ _csrf: csrf, email, password: PASSWORD }).toString(),
  });
  const session = res.headers
    .getSetCookie()
    .find((c) => c.startsWith('parley_session='))
    ?.split(';')[0];
  if (!session) throw new Error(`sign-in failed: ${res.status}`);
  return session;
}

interface Figures {
  readonly name: string;
  readonly eventP50: number;
  readonly eventP99: number;
  readonly shownP50: number | undefined;
  readonly shownP99: number | undefined;
  readonly rssPerPageKiB: number;
}

/** Rounds of: one change, then every page's event (and, with `refresh`, its fragment read again). */
async function measure(
  pages: number,
  open: (onEvent: (page: number) => void) => Promise<(() => void)[]>,
  change: (round: number) => { readonly marker: string; run(): Promise<void> },
  refresh: ((marker: string) => Promise<void>) | undefined,
  /** Called once every page is open, before the first change (what the pages alone hold). */
  onOpen: () => void,
) {
  const events: number[] = [];
  const shown: number[] = [];
  let waiting: ((page: number) => void) | undefined;
  const closers = await open((page) => waiting?.(page));
  // Settled: the sockets' buffers allocated, the pages' answers collected.
  await new Promise((r) => setTimeout(r, 500));
  onOpen();
  for (let round = 0; round < ROUNDS; round++) {
    const seen = new Set<number>();
    const refreshed: Promise<void>[] = [];
    const { marker, run } = change(round);
    let started = 0;
    const all = new Promise<void>((resolve) => {
      waiting = (page) => {
        if (seen.has(page)) return;
        seen.add(page);
        const at = performance.now();
        events.push(at - started);
        if (refresh) refreshed.push(refresh(marker).then(() => void shown.push(performance.now() - started)));
        if (seen.size === pages) resolve();
      };
    });
    started = performance.now();
    await run();
    await all;
    await Promise.all(refreshed);
    waiting = undefined;
  }
  events.sort((a, b) => a - b);
  shown.sort((a, b) => a - b);
  return { events, shown, closers };
}

async function runParley(dialect: 'sqlite' | 'postgres'): Promise<Figures> {
  const port = await freePort();
  const { env, cleanup } = messagingBenchEnv(dialect, 'inbox', `http://127.0.0.1:${await freePort()}`);
  env.PARLEY_PASSWORD_HASH_COST = '10';
  const children: ChildProcess[] = [];
  try {
    log(`${dialect}: an organization, an agent with a number and no hook, a person`);
    const org = await parleyJson<{ id: string }>(
      args.dist,
      ['org', 'create', '--name', 'Bench', '--plan', 'paid'],
      env,
    );
    await parleyJson(
      args.dist,
      ['agent', 'create', '--org', org.id, '--name', 'Bench', '--number', '+16505550143'],
      env,
    );
    const numbers = await parleyJson<{ phoneNumberId: string }[]>(args.dist, ['number', 'list', '--org', org.id], env);
    const phoneNumberId = numbers[0]?.phoneNumberId ?? '';
    const email = 'bench@example.com';
    await parleyJson(
      args.dist,
      ['user', 'create', '--org', org.id, '--email', email, '--role', 'member', '--password', PASSWORD],
      env,
    );
    const parley = spawnNode([...entry(args.dist), 'serve', '--port', String(port)], env);
    children.push(parley);
    const base = `http://127.0.0.1:${port}`;
    await waitUp(`${base}/api/health`, parley);
    const cookie = await signIn(base, email);
    const getPage = async (path: string) => {
      const res = await fetch(`${base}${path}`, { headers: { cookie } });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
      return text;
    };
    // Warm up: a page and a stream, opened and closed, so that what follows counts open pages only.
    await getPage('/dashboard/inbox');
    (await openStream(`${base}/dashboard/inbox/stream`, cookie, () => undefined))();
    await new Promise((r) => setTimeout(r, 500));
    global.gc?.();
    const before = rssKiB(parley.pid);
    let after = before;
    log(`${dialect}: ${PAGES} inbox pages open, ${ROUNDS} inbound messages`);
    const result = await measure(
      PAGES,
      async (onEvent) =>
        Promise.all(
          Array.from({ length: PAGES }, async (_, page) => {
            await getPage('/dashboard/inbox');
            return openStream(`${base}/dashboard/inbox/stream`, cookie, () => onEvent(page));
          }),
        ),
      (round) => {
        const from = `1415556${String(round).padStart(4, '0')}`;
        const body = inboundBody(phoneNumberId, `wamid.benchinbox${dialect}${round}`, from);
        const signature = `sha256=${createHmac('sha256', BENCH_APP_SECRET).update(body).digest('hex')}`;
        return {
          marker: `+${from}`,
          run: async () => {
            const res = await fetch(`${base}/webhooks/msgapp`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
              body,
            });
            await res.arrayBuffer();
            if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
          },
        };
      },
      async (marker) => {
        const list = await getPage('/dashboard/inbox/list?view=people');
        if (!list.includes(marker)) throw new Error(`a page read its list and did not find ${marker}`);
      },
      () => {
        after = rssKiB(parley.pid);
      },
    );
    for (const close of result.closers) close();
    return {
      name: `Parley, ${dialect}`,
      eventP50: quantile(result.events, 0.5),
      eventP99: quantile(result.events, 0.99),
      shownP50: quantile(result.shown, 0.5),
      shownP99: quantile(result.shown, 0.99),
      rssPerPageKiB: (after - before) / PAGES,
    };
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    await cleanup();
  }
}

async function runBaseline(): Promise<Figures> {
  const { child, url } = await startListening(['--import', 'tsx', 'bench/sse-baseline-server.ts', '0'], 'SSE baseline');
  try {
    (await openStream(`${url}/stream`, '', () => undefined))();
    await new Promise((r) => setTimeout(r, 200));
    const before = rssKiB(child.pid);
    let after = before;
    log(`baseline: ${PAGES} streams, ${ROUNDS} changes`);
    const result = await measure(
      PAGES,
      (onEvent) =>
        Promise.all(Array.from({ length: PAGES }, (_, page) => openStream(`${url}/stream`, '', () => onEvent(page)))),
      () => ({
        marker: '',
        run: async () => {
          const res = await fetch(`${url}/poke`, { method: 'POST', body: 'x' });
          await res.arrayBuffer();
        },
      }),
      undefined,
      () => {
        after = rssKiB(child.pid);
      },
    );
    for (const close of result.closers) close();
    return {
      name: 'bare node:http, one event to every stream',
      eventP50: quantile(result.events, 0.5),
      eventP99: quantile(result.events, 0.99),
      shownP50: undefined,
      shownP99: undefined,
      rssPerPageKiB: (after - before) / PAGES,
    };
  } finally {
    await stopChild(child);
  }
}

const results: Figures[] = [await runBaseline()];
for (const dialect of process.env.DATABASE_URL ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)) {
  results.push(await runParley(dialect));
}
const ms = (x: number | undefined) => (x === undefined ? '—' : x >= 100 ? x.toFixed(0) : x.toFixed(1));
console.log(`\n### Inbox live updates: ${PAGES} pages open, ${ROUNDS} rounds\n`);
console.log(
  '| server | change → event on a page p50 ms | p99 ms | → page shows it p50 ms | p99 ms | RSS per open page |',
);
console.log('| - | -: | -: | -: | -: | -: |');
for (const r of results) {
  console.log(
    `| ${r.name} | ${ms(r.eventP50)} | ${ms(r.eventP99)} | ${ms(r.shownP50)} | ${ms(r.shownP99)} | ${r.rssPerPageKiB.toFixed(0)} KiB |`,
  );
}
