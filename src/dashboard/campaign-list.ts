import { listAgents } from '../agents/agent.service.js';
import { type Campaign, campaignWithCounts, listCampaigns } from '../campaigns/campaign.service.js';
import { DELIVERY_STATUSES } from '../campaigns/index.js';
import type { AppContext } from '../context.js';
import type { Session } from './session.service.js';
import { canManage } from './user.service.js';
import { renderPage } from './views.js';

export const STATUSES = DELIVERY_STATUSES.map((key) => ({ key, label: key.charAt(0).toUpperCase() + key.slice(1) }));
export const STATUS_WORDS: Record<Campaign['status'], string> = { active: 'Active', paused: 'Paused' };
export const templateText = (c: Campaign) =>
  c.template ? `${c.template} (${c.language ?? ''})` : 'none (cannot send)';

/** Owners and admins of an organization on the paid plan create campaigns (their keys need it). */
export const mayCreateCampaign = (session: Session) => canManage(session.user.role) && session.org.plan === 'paid';

/** The campaigns list (/dashboard/campaigns), optionally with a dialog open (the no-JavaScript path). */
export async function campaignListPage(
  ctx: Pick<AppContext, 'db'>,
  session: Session,
  options: { removed?: string | undefined; dialog?: string | undefined } = {},
): Promise<string> {
  const { db } = ctx;
  const [campaigns, agentList] = await Promise.all([listCampaigns(db, session.org.id), listAgents(db, session.org.id)]);
  const agents = new Map(agentList.map((a) => [a.id, a.name]));
  const rows = await Promise.all(
    campaigns.map(async (c) => ({
      id: c.id,
      name: c.name,
      agent: c.agentId ? (agents.get(c.agentId) ?? c.agentId) : '—',
      template: templateText(c),
      status: STATUS_WORDS[c.status],
      paused: c.status === 'paused',
      counts: (await campaignWithCounts(db, session.org.id, c.id)).counts,
    })),
  );
  return renderPage(
    'campaigns',
    {
      title: 'Campaigns',
      session,
      section: 'campaigns',
      org: session.org,
      csrfToken: session.csrfToken,
      canManage: canManage(session.user.role),
      canCreate: mayCreateCampaign(session),
      statuses: STATUSES,
      rows,
      removed: options.removed,
    },
    options.dialog,
  );
}
