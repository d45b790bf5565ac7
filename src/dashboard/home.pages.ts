import type { FastifyInstance } from 'fastify';
import { listAgents } from '../agents/agent.service.js';
import { type Campaign, campaignWithCounts, listCampaigns } from '../campaigns/campaign.service.js';
import type { AppContext } from '../context.js';
import { countOpenConversations } from '../conversations/index.js';
import { type HookHealth, hookHealthOfOrg } from '../events/hook-health.service.js';
import { listKeys } from '../keys/key.service.js';
import { listNumbers } from '../numbers/number.service.js';
import { hookHealthView } from './hooks.pages.js';
import { overviewSection } from './overview.js';
import { HOME_PATH, html, KEYS_PATH, type PageKit } from './page-kit.js';
import type { Session } from './session.service.js';
import { canChangePlan, canManage } from './user.service.js';
import { renderPage } from './views.js';

/** Running campaigns shown on the home page; the rest are one click away on Campaigns. */
const CAMPAIGNS_SHOWN = 5;

/** A hook as the home page shows it: its address, its state in a word, and how its deliveries go. */
export interface HookSummary {
  url: string;
  /** The badge's class: `enabled` (working), `failing`, `disabled` or `muted` (no deliveries yet). */
  badge: 'enabled' | 'failing' | 'disabled' | 'muted';
  stateText: string;
  health: string;
}

const BADGES: Record<HookHealth['state'], HookSummary['badge']> = {
  healthy: 'enabled',
  failing: 'failing',
  disabled: 'disabled',
  none: 'muted',
};

const hookOf = (h: HookHealth): HookSummary => {
  const view = hookHealthView(h);
  return {
    url: view.url,
    badge: BADGES[h.state],
    stateText: view.stateText,
    health: `Last delivery: ${view.lastText}. Failures in the last hour: ${view.failuresLastHour}.`,
  };
};

/** The campaign's progress: deliveries done (sent, delivered or read), failed, still to go. */
function progressOf(c: Campaign & { counts: Record<string, number> }) {
  const n = (s: string) => c.counts[s] ?? 0;
  const done = n('sent') + n('delivered') + n('read');
  const failed = n('failed');
  const total = Object.values(c.counts).reduce((a, b) => a + b, 0);
  return { id: c.id, name: c.name, done, failed, pending: total - done - failed, total };
}

/**
 * Home (/dashboard), where a sign-in lands: what the organization has (its agents with their
 * numbers and hooks, its open conversations, its running campaigns) or, while it has little, the
 * next steps. Every figure comes from the features' services.
 */
export function registerHomePages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;

  const homePage = async (session: Session, days: 7 | 30 = 7) => {
    const orgId = session.org.id;
    const [agents, numbers, health, keys, campaigns, open] = await Promise.all([
      listAgents(db, orgId),
      listNumbers(db, orgId),
      hookHealthOfOrg(db, orgId, clock.now()),
      session.org.plan === 'paid' ? listKeys(db, orgId) : Promise.resolve([]),
      listCampaigns(db, orgId),
      countOpenConversations(db, orgId),
    ]);
    const phones = new Map(numbers.map((n) => [n.id, n.phone]));
    const active = campaigns.filter((c) => c.status === 'active');
    const running = await Promise.all(
      active.slice(0, CAMPAIGNS_SHOWN).map(async (c) => progressOf(await campaignWithCounts(db, orgId, c.id))),
    );
    const hooks = health.filter((h) => h.endpoint.agentId !== null);
    const steps = {
      key: keys.some((k) => k.revokedAt === null),
      agent: agents.length > 0,
      hook: hooks.length > 0,
    };
    return renderPage('home', {
      title: 'Home',
      session,
      section: 'home',
      org: session.org,
      orgId,
      keysPath: KEYS_PATH,
      canManage: canManage(session.user.role),
      canUpgrade: canChangePlan(session.user.role),
      steps,
      allDone: steps.key && steps.agent && steps.hook,
      firstAgent: agents[0]?.id ?? 'agt_...',
      agents: agents.map((a) => ({
        id: a.id,
        name: a.name,
        number: a.numberId ? (phones.get(a.numberId) ?? a.numberId) : 'No number yet',
        hooks: hooks.filter((h) => h.endpoint.agentId === a.id).map(hookOf),
      })),
      open,
      running,
      moreRunning: Math.max(0, active.length - running.length),
      overview: await overviewSection(ctx, session, days),
    });
  };

  app.get(HOME_PATH, kit.signedIn, async (request, reply) => {
    const days = (request.query as { days?: string }).days === '30' ? 30 : 7;
    return html(reply, await homePage(kit.sessionOf(request), days));
  });
}
