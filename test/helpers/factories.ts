import { createAgent } from '../../src/agents/agent.service.js';
import { createCampaign } from '../../src/campaigns/campaign.service.js';
import type { AppContext } from '../../src/context.js';
import { createKey } from '../../src/keys/key.service.js';
import type { Permission, Scope } from '../../src/keys/permissions.js';
import { createOrganization, type Plan } from '../../src/orgs/org.service.js';
import { randomBase62 } from '../../src/shared/ids.js';
import { createTrigger } from '../../src/triggers/trigger.service.js';

const unique = (label: string) => `${label} ${randomBase62(6)}`;

export async function makeOrg(ctx: AppContext, plan: Plan = 'paid', defaultCountry?: string) {
  return createOrganization(ctx.db, ctx.clock, {
    name: unique('Org'),
    plan,
    ...(defaultCountry ? { defaultCountry } : {}),
  });
}

export async function makeAgent(ctx: AppContext, orgId: string) {
  return createAgent(ctx.db, ctx.clock, { orgId, name: unique('Agent') });
}

export async function makeCampaign(ctx: AppContext, orgId: string) {
  return createCampaign(ctx.db, ctx.clock, { orgId, name: unique('Campaign') });
}

export interface KeyOptions {
  scope?: Scope;
  permissions?: Permission[];
  agentId?: string;
  campaignId?: string;
}

/** Creates a key; `auth` is ready to spread into inject() headers. */
export async function makeKey(ctx: AppContext, orgId: string, options: KeyOptions = {}) {
  const scope = options.scope ?? 'organization';
  const defaults: Permission[] = scope === 'campaign' ? ['campaigns'] : ['channels', 'triggers', 'endusers'];
  const { apiKey, key } = await createKey(ctx.db, ctx.clock, ctx.region.region, {
    orgId,
    label: unique('key'),
    scope,
    permissions: options.permissions ?? defaults,
    ...(options.agentId ? { agentId: options.agentId } : {}),
    ...(options.campaignId ? { campaignId: options.campaignId } : {}),
  });
  return { ...apiKey, key, auth: { authorization: `Bearer ${key}` } };
}

/** A paid organization with one agent, an organization key (Channels, Triggers, End-users) and an agent key. */
export async function makeTenant(ctx: AppContext) {
  const org = await makeOrg(ctx);
  const agent = await makeAgent(ctx, org.id);
  const orgKey = await makeKey(ctx, org.id, { permissions: ['channels', 'triggers', 'endusers'] });
  const agentKey = await makeKey(ctx, org.id, {
    scope: 'agent',
    agentId: agent.id,
    permissions: ['channels', 'triggers'],
  });
  return { org, agent, orgKey, agentKey };
}

/** A trigger `id` of the agent whose opening template is the sandbox's `hello_world` (or `template`). */
export async function makeTrigger(
  ctx: AppContext,
  orgId: string,
  agentId: string,
  id: string,
  template = 'hello_world',
) {
  return createTrigger(ctx.db, ctx.clock, { orgId, agentId, name: `Trigger ${id}`, template, language: 'en_US', id });
}
