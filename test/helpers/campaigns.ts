import { createCampaign } from '../../src/campaigns/campaign.service.js';
import type { AppContext } from '../../src/context.js';
import type { TestApp } from './app.js';
import { makeKey } from './factories.js';
import { call } from './http.js';
import { makeSendingTenant } from './messaging.js';

/** A paid organization whose agent has a sandbox number, a campaign sending `hello_world`, and its key. */
export async function makeCampaignTenant(ctx: AppContext, template = { name: 'hello_world', language: 'en_US' }) {
  const tenant = await makeSendingTenant(ctx);
  const campaign = await createCampaign(ctx.db, ctx.clock, {
    orgId: tenant.org.id,
    name: 'Spring launch',
    agentId: tenant.agent.id,
    template: template.name,
    language: template.language,
  });
  const campaignKey = await makeKey(ctx, tenant.org.id, { scope: 'campaign', campaignId: campaign.id });
  return { ...tenant, campaign, campaignKey };
}

/** Distinct valid US numbers (+1 650 2xx xxxx), `count` of them from `start`. */
export function phones(count: number, start = Math.floor(Math.random() * 1_000_000)): string[] {
  return Array.from({ length: count }, (_, i) => `+16502${String((start + i) % 1_000_000).padStart(6, '0')}`);
}

export function postRecipients(
  t: TestApp,
  campaignId: string,
  auth: Record<string, string>,
  recipients: unknown[],
  headers: Record<string, string> = {},
) {
  return call(t, {
    method: 'POST',
    url: `/api/campaigns/${campaignId}/webhook`,
    headers: { ...auth, ...headers },
    payload: { recipients },
  });
}

export async function campaignCounts(t: TestApp, campaignId: string, auth: Record<string, string>) {
  const res = await call(t, { method: 'GET', url: `/api/campaigns/${campaignId}`, headers: auth });
  if (res.statusCode !== 200) throw new Error(`GET campaign: ${res.statusCode} ${res.body}`);
  return res.json().counts as Record<'queued' | 'sending' | 'sent' | 'delivered' | 'read' | 'failed', number>;
}

/** Messages the provider accepted, per recipient, for a campaign's agent. */
export async function acceptedPerRecipient(t: TestApp, agentId: string): Promise<Map<string, number>> {
  const rows = await t.ctx.db
    .selectFrom('messages')
    .select(['to_phone', (eb) => eb.fn.countAll<number>().as('n')])
    .where('agent_id', '=', agentId)
    .where('provider_message_id', 'is not', null)
    .groupBy('to_phone')
    .execute();
  return new Map(rows.map((r) => [r.to_phone, Number(r.n)]));
}
