/**
 * What the policies of a send cost (src/policies/: the number's template catalogue and the
 * recipient's consent): sends per second through POST /api/channels/send from a number whose
 * catalogue was never synced (the checks find nothing to judge: the send as before them) against
 * one whose catalogue is synced (the template checked from memory), and a marketing template from
 * it (the recipient's consent read too), on SQLite and (when DATABASE_URL is set) PostgreSQL.
 *
 *   node --import tsx bench/policies.ts                   # SQLite, 2 s per run, 3 rounds, 50 connections: under a minute
 *   DATABASE_URL=... node --import tsx bench/policies.ts --dialects postgres   # PostgreSQL (sqlite,postgres: both)
 *   npm run build && node --import tsx bench/policies.ts --dist --duration 10 --rounds 5   # a steadier figure
 *
 * One Parley (`parley serve`) and one sandbox (`parley sandbox`, no status webhooks), two tenants
 * seeded in the same database; the three loads take turns (A, B, C; then B, C, A ...) so that each
 * is measured in the same moments of a machine whose speed drifts, and the median of each is kept.
 */
import type { ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import {
  autocannon,
  cpuMs,
  dialectsArg,
  entry,
  freePort,
  log,
  messagingBenchEnv,
  parleyJson,
  seedSendingTenant,
  spawnNode,
  stopChild,
  waitUp,
} from './child-server.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    dist: { type: 'boolean', default: false },
    // sqlite (the default, to stay under a minute), postgres (needs DATABASE_URL), or both.
    dialects: { type: 'string', default: 'sqlite' },
  },
});
const DURATION = Number(args.duration);
const ROUNDS = Number(args.rounds);
const CONNECTIONS = Number(args.connections);
const BUILD = args.dist;
const ENTRY = entry(BUILD);

interface Load {
  readonly name: string;
  readonly key: string;
  readonly body: string;
}

const send = (to: string, name: string, body: string[], header: string[] = []) =>
  JSON.stringify({
    channel: 'msgapp',
    to,
    type: 'template',
    template: { name, language: 'en_US', parameters: { header, body } },
  });

async function runDialect(dialect: 'sqlite' | 'postgres'): Promise<string[]> {
  const sandboxPort = await freePort();
  const parleyPort = await freePort();
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const { env, cleanup } = messagingBenchEnv(dialect, 'policies', sandboxUrl);
  const children: ChildProcess[] = [];
  try {
    const off = await seedSendingTenant(BUILD, env);
    const on = await seedSendingTenant(BUILD, env);
    const noStatuses = { PARLEY_SANDBOX_STATUSES: 'false' };
    const sandbox = spawnNode(
      [
        ...ENTRY,
        'sandbox',
        '--port',
        String(sandboxPort),
        '--webhook-url',
        `http://127.0.0.1:${parleyPort}/webhooks/msgapp`,
      ],
      { ...env, ...noStatuses },
    );
    children.push(sandbox);
    await waitUp(`${sandboxUrl}/sandbox/health`, sandbox);
    // Only the second tenant's catalogue is read: its sends are checked, the first's find nothing to check.
    await parleyJson(BUILD, ['template', 'sync', '--org', on.orgId], env);
    const parley = spawnNode([...ENTRY, 'serve', '--port', String(parleyPort)], env);
    children.push(parley);
    await waitUp(`http://127.0.0.1:${parleyPort}/api/health`, parley);

    const to = '+14155550100';
    const loads: Load[] = [
      {
        name: 'checks off (catalogue never synced)',
        key: off.key,
        body: send(to, 'order_update', ['Ada', 'A1'], ['Hi']),
      },
      {
        name: 'catalogue checked (utility template)',
        key: on.key,
        body: send(to, 'order_update', ['Ada', 'A1'], ['Hi']),
      },
      {
        name: 'catalogue and consent checked (marketing template)',
        key: on.key,
        body: send(to, 'spring_sale', ['20%']),
      },
    ];
    const url = `http://127.0.0.1:${parleyPort}/api/channels/send`;
    const headersOf = (l: Load) => ({ 'content-type': 'application/json', authorization: `Bearer ${l.key}` });
    // Each once first: the recipient is known (an end user in an open conversation), the code warm.
    for (const l of loads) {
      for (let i = 0; i < 100; i++) {
        const res = await request(url, { method: 'POST', headers: headersOf(l), body: l.body });
        await res.body.dump();
        if (res.statusCode !== 200) throw new Error(`${l.name}: the send answered ${res.statusCode}`);
      }
    }
    const rates = loads.map(() => [] as number[]);
    // Parley's CPU per send: on a machine shared with other work, steadier than sends/s.
    const cpus = loads.map(() => [] as number[]);
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < loads.length; k++) {
        const j = (round + k) % loads.length;
        const l = loads[j];
        if (!l) continue;
        log(`${dialect}: round ${round + 1}: ${l.name}: ${DURATION} s at ${CONNECTIONS} connections`);
        const cpu0 = cpuMs(parley.pid);
        const r = await autocannon({
          url,
          connections: CONNECTIONS,
          duration: DURATION,
          method: 'POST',
          headers: headersOf(l),
          body: l.body,
        });
        if (r.non2xx > 0 || r.errors > 0) log(`  warning: ${r.non2xx} non-2xx, ${r.errors} errors`);
        rates[j]?.push(r.requests.average);
        cpus[j]?.push(((cpuMs(parley.pid) - cpu0) * 1000) / Math.max(1, r.requests.total));
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const base = median(rates[0] ?? []);
    const baseCpu = median(cpus[0] ?? []);
    return loads.map((l, i) => {
      const rate = median(rates[i] ?? []);
      const cpu = median(cpus[i] ?? []);
      const cost = (x: number, b: number, more: boolean) =>
        i === 0 ? '' : `${(((more ? x - b : b - x) / b) * 100).toFixed(1)} %`;
      return `| ${dialect} | ${l.name} | ${Math.round(rate).toLocaleString('en')} | ${cost(rate, base, false)} | ${Math.round(cpu)} | ${cost(cpu, baseCpu, true)} |`;
    });
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    await cleanup();
  }
}

const lines = [
  '| database | sends | sends/s (median) | fewer sends/s than checks off | Parley CPU µs per send (median) | more CPU than checks off |',
  '| - | - | - | - | - | - |',
];
for (const dialect of dialectsArg(args.dialects)) lines.push(...(await runDialect(dialect)));
process.stdout.write(`${lines.join('\n')}\n`);
