/**
 * A node killed with kill -9 in the middle of a campaign: another node finishes it. No accepted
 * delivery is lost, and none is sent twice (every provider call is preceded by the message's row,
 * so one row per recipient at most means one call at most).
 */
import { describe, expect, it } from 'vitest';
import { createTestApp, DIALECTS, type TestApp } from '../helpers/app.js';
import { makeCampaignTenant, phones } from '../helpers/campaigns.js';
import { freePort, type ServeProcess, startServe } from '../helpers/cli.js';
import { until } from '../helpers/wait.js';

type Counts = Record<'queued' | 'sending' | 'sent' | 'delivered' | 'read' | 'failed', number>;

async function counts(url: string, campaignId: string, auth: Record<string, string>): Promise<Counts> {
  const res = await fetch(`${url}/api/campaigns/${campaignId}`, { headers: auth });
  if (res.status !== 200) throw new Error(`GET campaign: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { counts: Counts }).counts;
}

async function messageRows(t: TestApp, agentId: string): Promise<Map<string, number>> {
  const rows = await t.ctx.db
    .selectFrom('messages')
    .select(['to_phone', (eb) => eb.fn.countAll<number>().as('n')])
    .where('agent_id', '=', agentId)
    .groupBy('to_phone')
    .execute();
  return new Map(rows.map((r) => [r.to_phone, Number(r.n)]));
}

/** Recipients of the campaign the node dies in. */
const N = 1000;
/**
 * A send waits up to a minute for the sandbox's answer (on a starved machine a 10 s wait can pass,
 * and a send whose outcome is unknown is never resent); a claim is taken over by another node once
 * older than that and 30 s.
 */
const PROVIDER_TIMEOUT_MS = 60_000;
const STALE_CLAIM_MS = PROVIDER_TIMEOUT_MS + 30_000;

describe.each(DIALECTS)('campaign delivery and kill -9 (%s)', (dialect) => {
  it('a node killed in the middle of a 1,000-recipient campaign: the next one finishes it, nothing lost, nothing sent twice', async () => {
    // In-process only to set up and read the database: it works no jobs.
    const t = await createTestApp(dialect, { workJobs: false });
    const env = {
      ...t.env,
      LOG_LEVEL: 'warn',
      PARLEY_NUMBER_MPS: '200',
      // A send whose outcome the kill made unknown is settled (failed) after 3 s instead of an hour.
      PARLEY_CAMPAIGN_UNCONFIRMED_MS: '3000',
      PARLEY_JOB_LEASE_MS: '1500',
      PARLEY_JOB_POLL_MS: '100',
      PARLEY_PROVIDER_TIMEOUT_MS: String(PROVIDER_TIMEOUT_MS),
    };
    let first: ServeProcess | undefined;
    let second: ServeProcess | undefined;
    try {
      const c = await makeCampaignTenant(t.ctx);
      const recipients = phones(N);
      const one = await startServe(['--port', String(await freePort())], env);
      first = one;
      const url1 = one.ready.regions[0]?.url ?? '';
      const posted = await fetch(`${url1}/api/campaigns/${c.campaign.id}/webhook`, {
        method: 'POST',
        headers: { ...c.campaignKey.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ recipients: recipients.map((to) => ({ to })) }),
      });
      expect(posted.status).toBe(202);
      expect(((await posted.json()) as { accepted: number }).accepted).toBe(N);
      await until(async () => (await messageRows(t, c.agent.id)).size >= 200, '200 sends by the first node', 120_000);
      one.child.kill('SIGKILL');
      await one.stop();
      const sentBefore = (await messageRows(t, c.agent.id)).size;
      expect(sentBefore).toBeLessThan(N);
      // The dead node's claims are taken over once older than the provider timeout and 30 s
      // (deliver-campaign.task.ts). They are made that much older less 3 s, as if the second node
      // started that long after the kill: it still meets them held and waits, then takes them
      // over, without the suite waiting out the rest.
      const held = await t.ctx.db
        .updateTable('campaign_deliveries')
        .set((eb) => ({ claimed_at: eb('claimed_at', '-', STALE_CLAIM_MS - 3_000) }))
        .where('campaign_id', '=', c.campaign.id)
        .where('state', '=', 'queued')
        .where('claimed_at', 'is not', null)
        .executeTakeFirst();
      expect(Number(held.numUpdatedRows)).toBeGreaterThan(0);

      const two = await startServe(['--port', String(await freePort())], env);
      second = two;
      const url2 = two.ready.regions[0]?.url ?? '';
      // Settled: failed, or accepted by the provider (statuses of the sends the killed node's own
      // sandbox accepted never come: it died with them; a real provider would still report).
      const settled = async () => {
        const rows = await t.ctx.db
          .selectFrom('campaign_deliveries as d')
          .leftJoin('messages as m', 'm.id', 'd.message_id')
          .select(['d.state', 'm.provider_message_id'])
          .where('d.campaign_id', '=', c.campaign.id)
          .execute();
        return rows.filter((r) => r.state === 'failed' || (r.state === 'sending' && r.provider_message_id !== null))
          .length;
      };
      await until(async () => (await settled()) === N, 'every delivery settled by the second node', 240_000);
      const n = await counts(url2, c.campaign.id, c.campaignKey.auth);
      // Nothing lost: all 1,000 are accounted for, most of them sent.
      expect(n.queued).toBe(0);
      expect(n.sending + n.sent + n.delivered + n.read + n.failed).toBe(N);
      // Failed: only sends the kill left with an unknown outcome, at most the deliveries the node was
      // working on (its delivery concurrency, 64 at this pace), each saying why and never resent.
      expect(n.failed).toBeLessThanOrEqual(64);
      const failed = await t.ctx.db
        .selectFrom('campaign_deliveries')
        .select(['error', 'message_id'])
        .where('campaign_id', '=', c.campaign.id)
        .where('state', '=', 'failed')
        .execute();
      expect(failed).toHaveLength(n.failed);
      for (const f of failed) {
        expect(f.error).toMatch(/unknown \(its answer was lost\).*it was not sent again/);
        expect(f.message_id).not.toBeNull();
      }
      // Nothing sent twice.
      const rows = await messageRows(t, c.agent.id);
      expect([...rows.values()].filter((k) => k > 1)).toEqual([]);
      expect(rows.size).toBeGreaterThanOrEqual(N - 64);
    } finally {
      await second?.stop();
      await first?.stop();
      await t.close();
    }
  }, 480_000);
});
