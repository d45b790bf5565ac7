import { listAgents } from '../agents/agent.service.js';
import type { Campaign } from '../campaigns/campaign.service.js';
import { DELIVERY_STATUSES, pageOfCampaigns } from '../campaigns/index.js';
import type { AppContext } from '../context.js';
import { pageRequestOf, pagerOf } from './pager.js';
import { progressOf, STATUS_LABELS } from './progress.js';
import type { Session } from './session.service.js';
import { canManage } from './user.service.js';
import { renderPage } from './views.js';

export const STATUSES = DELIVERY_STATUSES.map((key) => ({ key, label: STATUS_LABELS[key] }));
export const STATUS_WORDS: Record<Campaign['status'], string> = { active: 'Active', paused: 'Paused' };
export const templateText = (c: Campaign) =>
  c.template ? `${c.template} (${c.language ?? ''})` : 'none (cannot send)';

/** Owners and admins of an organization on the paid plan create campaigns (their keys need it). */
export const mayCreateCampaign = (session: Session) => canManage(session.user.role) && session.org.plan === 'paid';

/**
 * The campaigns list (/dashboard/campaigns), a page at a time with each campaign's progress,
 * optionally with a dialog open (the no-JavaScript path).
 */
export async function campaignListPage(
  ctx: Pick<AppContext, 'db'>,
  session: Session,
  options: {
    query?: Record<string, string | undefined>;
    removed?: string | undefined;
    dialog?: string | undefined;
  } = {},
): Promise<string> {
  const { db } = ctx;
  const [page, agentList] = await Promise.all([
    pageOfCampaigns(db, session.org.id, pageRequestOf(options.query ?? {})),
    listAgents(db, session.org.id),
  ]);
  const agents = new Map(agentList.map((a) => [a.id, a.name]));
  const rows = page.data.map((c) => ({
    id: c.id,
    name: c.name,
    agent: c.agentId ? (agents.get(c.agentId) ?? c.agentId) : '—',
    template: templateText(c),
    status: STATUS_WORDS[c.status],
    paused: c.status === 'paused',
    progress: progressOf(c.counts),
  }));
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
      rows,
      pager: pagerOf('/dashboard/campaigns', {}, page),
      removed: options.removed,
    },
    options.dialog,
  );
}
