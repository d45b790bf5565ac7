/**
 * Fault drills: real `parley serve` nodes under real faults, each asserting that every send gets a
 * final answer, nothing is lost (every accepted send is stored with the provider's ID) and nothing
 * is sent twice (the provider's own log, `GET /api/sandbox/messages`). Small in CI (seconds each);
 * at full size by hand with scripts/fault-drills.sh (sizes in drill.ts).
 *
 * Every node of a drill runs the built-in sandbox on one data folder, so its log of what it
 * accepted (in that folder's sandbox state file) is one log, whichever node sent.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SANDBOX_STATE_FILE } from '../../src/messaging/messaging.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTestApp, PG_URL, type TestApp } from '../helpers/app.js';
import { makeCampaignTenant } from '../helpers/campaigns.js';
import { freePort, startServe } from '../helpers/cli.js';
import { makeSendingTenant } from '../helpers/messaging.js';
import { until } from '../helpers/wait.js';
import {
  acceptedFor,
  DRILL,
  type FinalAnswer,
  ownRedis,
  pooled,
  recipients,
  sendUntilFinal,
  startBackendKiller,
  withApplicationName,
} from './drill.js';

type Node = Awaited<ReturnType<typeof startServe>>;

/** What a drill must undo, in reverse order, whatever happened. */
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const undo of cleanups.splice(0).reverse()) {
    try {
      await undo();
    } catch {
      // the next one still runs
    }
  }
});

async function startNode(env: Record<string, string>): Promise<{ node: Node; url: string }> {
  const node = await startServe(['--port', String(await freePort())], { LOG_LEVEL: 'warn', ...env });
  cleanups.push(() => node.stop('SIGKILL'));
  return { node, url: node.ready.regions[0]?.url ?? '' };
}

/** Prints a drill's figures (the by-hand runs report them). */
function report(drill: string, figures: Record<string, unknown>): void {
  process.stdout.write(`[fault drill] ${drill}: ${JSON.stringify(figures)}\n`);
}

function retriedOf(answers: readonly FinalAnswer[]): Record<string, number> {
  const all: Record<string, number> = {};
  for (const a of answers) for (const [k, n] of Object.entries(a.retried)) all[k] = (all[k] ?? 0) + n;
  return all;
}

/**
 * What every send drill asserts once its fault has passed: each send answered 200, the provider's
 * log shows each accepted exactly once, and each is stored once with the provider's ID it answered
 * (a send whose own write of that ID was lost gets it from the provider's status webhooks).
 */
async function assertEachSentOnce(t: TestApp, nodeUrl: string, auth: Record<string, string>, answers: FinalAnswer[]) {
  const unanswered = answers.filter((a) => a.status === undefined);
  expect(unanswered.map((a) => ({ to: a.to, tries: a.tries, retried: a.retried }))).toEqual([]);
  expect(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.body}`)).toEqual([]);

  const twiceOrNever: { to: string; accepted: number }[] = [];
  for (const a of answers) {
    const accepted = await acceptedFor(nodeUrl, auth, a.to);
    if (accepted !== 1) twiceOrNever.push({ to: a.to, accepted });
  }
  expect(twiceOrNever).toEqual([]);

  const lost = async () => {
    const rows = await t.ctx.db
      .selectFrom('messages')
      .select(['to_phone', 'provider_message_id'])
      .where(
        'to_phone',
        'in',
        answers.map((a) => a.to),
      )
      .execute();
    const stored = new Map<string, (string | null)[]>();
    for (const r of rows) stored.set(r.to_phone, [...(stored.get(r.to_phone) ?? []), r.provider_message_id]);
    return answers
      .map((a) => ({
        to: a.to,
        answered: (JSON.parse(a.body) as { messageId: string }).messageId,
        stored: stored.get(a.to),
      }))
      .filter((m) => m.stored?.length !== 1 || m.stored[0] !== m.answered);
  };
  await until(async () => (await lost()).length === 0, 'every send stored with its provider ID', 30_000).catch(
    () => undefined,
  );
  expect(await lost()).toEqual([]);
}

describe.skipIf(!PG_URL)('fault drill: PostgreSQL backends terminated during sends (postgres)', () => {
  it(`${DRILL.sends} sends while the node's backends are terminated: each answered, none lost, none twice`, async () => {
    // Sets up and reads the database; the node under test is a `parley serve` of its own, whose
    // connections carry an application_name of the drill's, so that only they are terminated.
    const t = await createTestApp('postgres', { workJobs: false });
    cleanups.push(() => t.close());
    const appName = `parley-drill-${randomBase62(10).toLowerCase()}`;
    const { node, url } = await startNode({
      ...t.env,
      DATABASE_URL: withApplicationName(PG_URL ?? '', appName),
      PARLEY_PG_CONNECT_TIMEOUT_MS: '2000',
    });
    const tenant = await makeSendingTenant(t.ctx);
    const started = Date.now();
    const killer = startBackendKiller(PG_URL ?? '', appName, DRILL.killForMs);
    let terminated = 0;
    let answers: FinalAnswer[];
    try {
      const deadline = Date.now() + DRILL.deadlineMs;
      answers = await pooled(recipients(DRILL.sends), DRILL.concurrency, (to) =>
        sendUntilFinal(() => url, tenant.agentKey.auth, to, `drill-${to}`, deadline),
      );
    } finally {
      terminated = await killer.stop();
    }
    report('postgres backends terminated', {
      sends: answers.length,
      terminated,
      seconds: (Date.now() - started) / 1000,
      retried: retriedOf(answers),
    });
    expect(node.child.exitCode).toBeNull();
    expect(terminated).toBeGreaterThan(0);
    await assertEachSentOnce(t, url, tenant.agentKey.auth, answers);
  }, 300_000);
});

describe.skipIf(!DRILL.all).each(PG_URL ? ['postgres' as const] : ['sqlite' as const])(
  'fault drill: Redis killed and restarted (%s)',
  (dialect) => {
    it(`${DRILL.sends} sends and a campaign while the node's Redis is killed and started again: each answered, none lost, none twice`, async () => {
      const t = await createTestApp(dialect, { workJobs: false });
      cleanups.push(() => t.close());
      // A Redis of the drill's own: the machine's is shared.
      const redis = ownRedis(await freePort());
      await redis.start();
      cleanups.push(() => redis.kill());
      const { node, url } = await startNode({
        ...t.env,
        REDIS_URL: redis.url,
        PARLEY_NUMBER_MPS: '200',
      });
      const c = await makeCampaignTenant(t.ctx);
      const campaignTo = recipients(Math.max(10, Math.floor(DRILL.sends / 2)));
      const started = Date.now();
      let running = true;
      let kills = 0;
      const chaos = (async () => {
        while (running) {
          await new Promise((r) => setTimeout(r, 200 + Math.random() * 400));
          if (!running) break;
          await redis.kill();
          kills++;
          await new Promise((r) => setTimeout(r, 100 + Math.random() * 400));
          await redis.start();
        }
      })();
      let answers: FinalAnswer[];
      try {
        const posted = await fetch(`${url}/api/campaigns/${c.campaign.id}/webhook`, {
          method: 'POST',
          headers: { ...c.campaignKey.auth, 'content-type': 'application/json', 'idempotency-key': 'drill' },
          body: JSON.stringify({ recipients: campaignTo.map((to) => ({ to })) }),
        });
        expect(posted.status, await posted.clone().text()).toBe(202);
        const deadline = Date.now() + DRILL.deadlineMs;
        answers = await pooled(recipients(DRILL.sends), DRILL.concurrency, (to) =>
          sendUntilFinal(() => url, c.agentKey.auth, to, `drill-${to}`, deadline),
        );
        // The campaign too, before Redis is left alone.
        await until(
          async () => {
            const rows = await t.ctx.db
              .selectFrom('campaign_deliveries')
              .select('state')
              .where('campaign_id', '=', c.campaign.id)
              .where('state', 'in', ['queued'])
              .execute();
            return rows.length === 0;
          },
          'the campaign handed out',
          DRILL.deadlineMs,
        );
      } finally {
        running = false;
        await chaos;
      }
      report('redis killed and restarted', {
        dialect,
        sends: answers.length,
        campaign: campaignTo.length,
        kills,
        seconds: (Date.now() - started) / 1000,
        retried: retriedOf(answers),
      });
      expect(node.child.exitCode).toBeNull();
      expect(kills).toBeGreaterThan(0);
      await assertEachSentOnce(t, url, c.agentKey.auth, answers);
      // The campaign: every recipient accepted exactly once by the provider.
      const campaignCounts: { to: string; accepted: number }[] = [];
      await until(
        async () => {
          campaignCounts.length = 0;
          for (const to of campaignTo)
            campaignCounts.push({ to, accepted: await acceptedFor(url, c.agentKey.auth, to) });
          return campaignCounts.every((x) => x.accepted >= 1);
        },
        'every campaign recipient sent',
        DRILL.deadlineMs,
      ).catch(() => undefined);
      expect(campaignCounts.filter((x) => x.accepted !== 1)).toEqual([]);
    }, 300_000);
  },
);

/** Whether this process may mount a tmpfs (root, with the capability): the full-disk drill needs one. */
function canMountTmpfs(): boolean {
  if (process.getuid?.() !== 0) return false;
  const dir = mkdtempSync(join(tmpdir(), 'parley-tmpfs-check-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
    execFileSync('umount', [dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.skipIf(!canMountTmpfs())('fault drill: a full disk (sqlite, the data folder on a small tmpfs)', () => {
  it(`${DRILL.sends} sends while the data folder's disk fills up and is freed: each answered, none lost, none twice`, async () => {
    const mnt = mkdtempSync(join(tmpdir(), 'parley-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', mnt]);
    cleanups.push(() => rmSync(mnt, { recursive: true, force: true }));
    cleanups.push(() => execFileSync('umount', ['-l', mnt]));
    const data = join(mnt, 'data');
    mkdirSync(data, { mode: 0o700 });
    // The provider is not on the node's disk: the sandbox's state (its log) lives elsewhere.
    const providerDir = mkdtempSync(join(tmpdir(), 'parley-provider-'));
    cleanups.push(() => rmSync(providerDir, { recursive: true, force: true }));
    symlinkSync(join(providerDir, SANDBOX_STATE_FILE), join(data, SANDBOX_STATE_FILE));

    const t = await createTestApp('sqlite', { workJobs: false, env: { PARLEY_DATA_DIR: data } });
    cleanups.push(() => t.close());
    const { node, url } = await startNode(t.env);
    const tenant = await makeSendingTenant(t.ctx);
    const filler = join(mnt, 'filler');
    const fill = () => {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(256 * 1024, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      } finally {
        closeSync(fd);
      }
    };
    const ready = async () => (await fetch(`${url}/api/ready`)).status;

    const started = Date.now();
    const deadline = Date.now() + DRILL.deadlineMs;
    const all = recipients(DRILL.sends);
    const sending = pooled(all, DRILL.concurrency, (to) =>
      sendUntilFinal(() => url, tenant.agentKey.auth, to, `drill-${to}`, deadline),
    );
    // Full once the first sends are through, for long enough that sends meet it.
    await until(async () => (await acceptedFor(url, tenant.agentKey.auth, all[0] ?? '')) > 0, 'a first send', 30_000);
    fill();
    let notReady = false;
    let full503 = 0;
    // Writes of its own, each a new send, so the drill need not hope that the sends met the full disk.
    const probes: string[] = [];
    await until(
      async () => {
        const to = recipients(1)[0] ?? '';
        probes.push(to);
        const res = await fetch(`${url}/api/channels/send`, {
          method: 'POST',
          headers: { ...tenant.agentKey.auth, 'content-type': 'application/json', 'idempotency-key': `drill-${to}` },
          body: JSON.stringify({
            channel: 'msgapp',
            to,
            type: 'template',
            template: { name: 'hello_world', language: 'en_US' },
          }),
        });
        if (res.status === 503) {
          full503++;
          expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(await res.json()).toEqual({ success: false, error: expect.any(String) });
        } else await res.body?.cancel();
        if ((await ready()) === 503) notReady = true;
        return full503 > 0 && notReady;
      },
      'the node to refuse writes and report itself not ready',
      20_000,
      100,
    );
    // Full a while longer, so that the sends meet it too (their retries, their claims' release).
    await new Promise((r) => setTimeout(r, DRILL.fullForMs));
    rmSync(filler);
    await until(async () => (await ready()) === 200, 'the node ready again once the disk has room', 30_000);
    const answers = await sending;
    // The probes' keys, retried now, send each once (a refused one's claim was released, not left in flight).
    const probed = await pooled(probes, DRILL.concurrency, (to) =>
      sendUntilFinal(() => url, tenant.agentKey.auth, to, `drill-${to}`, deadline),
    );
    report('full disk', {
      sends: answers.length,
      full503,
      seconds: (Date.now() - started) / 1000,
      probes: probes.length,
      retried: retriedOf([...answers, ...probed]),
    });
    expect(node.child.exitCode).toBeNull();
    expect(notReady).toBe(true);
    await assertEachSentOnce(t, url, tenant.agentKey.auth, [...answers, ...probed]);
  }, 300_000);
});

describe.skipIf(!DRILL.all).each(PG_URL ? ['postgres' as const] : ['sqlite' as const])(
  'fault drill: a node killed at three points of a campaign (%s)',
  (dialect) => {
    it(`a ${DRILL.campaign}-recipient campaign on two nodes, one killed at 15, 50 and 85 %: nothing lost, nothing sent twice`, async () => {
      const t = await createTestApp(dialect, { workJobs: false });
      cleanups.push(() => t.close());
      const env = {
        ...t.env,
        PARLEY_NUMBER_MPS: '200',
        // A send whose outcome the kill made unknown is settled (failed) after 3 s instead of an hour.
        PARLEY_CAMPAIGN_UNCONFIRMED_MS: '3000',
        PARLEY_JOB_LEASE_MS: '1500',
        PARLEY_JOB_POLL_MS: '100',
      };
      const c = await makeCampaignTenant(t.ctx);
      const to = recipients(DRILL.campaign);
      const nodes = [await startNode(env), await startNode(env)];
      const started = Date.now();
      const posted = await fetch(`${nodes[0]?.url}/api/campaigns/${c.campaign.id}/webhook`, {
        method: 'POST',
        headers: { ...c.campaignKey.auth, 'content-type': 'application/json', 'idempotency-key': 'drill' },
        body: JSON.stringify({ recipients: to.map((p) => ({ to: p })) }),
      });
      expect(posted.status, await posted.clone().text()).toBe(202);
      const storedSends = async () =>
        Number(
          (
            await t.ctx.db
              .selectFrom('messages')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('agent_id', '=', c.agent.id)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const killedAt: number[] = [];
      for (const [i, share] of [0.15, 0.5, 0.85].entries()) {
        await until(async () => (await storedSends()) >= share * to.length, `${share * 100} % sent`, 240_000);
        const victim = i % 2;
        nodes[victim]?.node.child.kill('SIGKILL');
        await nodes[victim]?.node.stop();
        killedAt.push(await storedSends());
        nodes[victim] = await startNode(env);
      }
      const settled = async () => {
        const rows = await t.ctx.db
          .selectFrom('campaign_deliveries as d')
          .leftJoin('messages as m', 'm.id', 'd.message_id')
          .select(['d.state', 'm.provider_message_id'])
          .where('d.campaign_id', '=', c.campaign.id)
          .execute();
        return rows.filter((r) => r.state === 'failed' || (r.state !== 'queued' && r.provider_message_id !== null))
          .length;
      };
      await until(async () => (await settled()) === to.length, 'every delivery settled', 300_000);
      const deliveries = await t.ctx.db
        .selectFrom('campaign_deliveries as d')
        .innerJoin('messages as m', 'm.id', 'd.message_id')
        .select(['m.to_phone', 'd.state', 'd.error'])
        .where('d.campaign_id', '=', c.campaign.id)
        .execute();
      const url = nodes[0]?.url ?? '';
      const wrong: { to: string; state: string; accepted: number }[] = [];
      let failed = 0;
      for (const d of deliveries) {
        const accepted = await acceptedFor(url, c.agentKey.auth, d.to_phone);
        if (d.state === 'failed') {
          failed++;
          // Failed only as a send the kill left unknown: perhaps accepted (its answer died with the
          // node), never sent again.
          expect(d.error).toMatch(/unknown \(its answer was lost\).*it was not sent again/);
          if (accepted > 1) wrong.push({ to: d.to_phone, state: d.state, accepted });
        } else if (accepted !== 1) wrong.push({ to: d.to_phone, state: d.state, accepted });
      }
      report('node killed during a campaign', {
        dialect,
        recipients: to.length,
        killedAt,
        failedUnknown: failed,
        seconds: (Date.now() - started) / 1000,
      });
      // Nothing lost: every recipient has a delivery with its message.
      expect(new Set(deliveries.map((d) => d.to_phone)).size).toBe(to.length);
      expect(wrong).toEqual([]);
    }, 900_000);
  },
);
