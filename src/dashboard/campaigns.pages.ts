import type { FastifyInstance } from 'fastify';
import { listAgents } from '../agents/agent.service.js';
import {
  type Campaign,
  campaignWithCounts,
  getCampaign,
  pauseCampaign,
  removeCampaign,
  resumeCampaign,
} from '../campaigns/campaign.service.js';
import { DELIVERY_STATUSES, type DeliveryStatus, pageOfCampaignDeliveries } from '../campaigns/index.js';
import type { AppContext } from '../context.js';
import { type ApiKey, createKey, PERMISSION_LABELS, revokeKey } from '../keys/key.service.js';
import { listCampaignKeys } from '../keys/key-lists.service.js';
import { AppError, isAppError } from '../shared/errors.js';
import { campaignAnalyticsSection, registerCampaignAnalyticsPages } from './campaign-analytics.js';
import { createCampaignDialog } from './campaign-create.pages.js';
import { campaignListPage, mayCreateCampaign, STATUS_WORDS, STATUSES, templateText } from './campaign-list.js';
import { field, formatTime, html, isHtmx, type PageKit, redirectAfterPost } from './page-kit.js';
import { PAGE_SIZE, pageRequestOf, pagerOf } from './pager.js';
import { progressOf, STATUS_LABELS } from './progress.js';
import { registerSegmentSendPages, segmentSendsSection } from './segment-sends.pages.js';
import type { Session } from './session.service.js';
import { renderPage, renderPartial } from './views.js';

const isStatus = (value: string | undefined): value is DeliveryStatus =>
  (DELIVERY_STATUSES as readonly string[]).includes(value ?? '');

/**
 * Campaigns (/dashboard/campaigns): the list, and a page per campaign with pause, resume and
 * remove, its counts, its deliveries and its keys (with their dialogs). Pages call the services.
 */
export function registerCampaignPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;
  const canManage = (session: Session) => session.user.role !== 'member';
  const pagePath = (campaignId: string) => `/dashboard/campaigns/${encodeURIComponent(campaignId)}`;

  const agentNames = async (orgId: string) => new Map((await listAgents(db, orgId)).map((a) => [a.id, a.name]));

  app.get('/dashboard/campaigns', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const query = request.query as Record<string, string | undefined>;
    const dialog =
      query.create !== undefined && mayCreateCampaign(session) ? await createCampaignDialog(ctx, session) : undefined;
    return html(reply, await campaignListPage(ctx, session, { query, removed: query.removed?.slice(0, 200), dialog }));
  });

  /** The campaign's own keys (they also appear in the API Keys panel, scoped `Campaign: <name>`). */
  const campaignKeys = (orgId: string, campaignId: string) => listCampaignKeys(db, orgId, campaignId);
  const findCampaignKey = async (orgId: string, campaignId: string, keyId: string) => {
    const key = (await campaignKeys(orgId, campaignId)).find((k) => k.id === keyId);
    if (!key) throw new AppError('NOT_FOUND', 'No such key for this campaign.');
    return key;
  };

  const campaignPage = async (
    session: Session,
    campaignId: string,
    query: Record<string, string | undefined>,
    dialog?: string,
    sends?: string,
  ) => {
    const campaign = await campaignWithCounts(db, session.org.id, campaignId);
    const status = isStatus(query.status) ? query.status : undefined;
    const [deliveries, keys, agents] = await Promise.all([
      // The most recent first, of one status or all.
      pageOfCampaignDeliveries(ctx, session.org.id, campaign.id, { ...pageRequestOf(query), status }),
      campaignKeys(session.org.id, campaign.id),
      agentNames(session.org.id),
    ]);
    const keyRows = keys.map((k: ApiKey) => ({
      id: k.id,
      label: k.label,
      prefix: k.prefix,
      permissionsText: k.permissions.map((p) => PERMISSION_LABELS[p]).join(', '),
      createdText: formatTime(k.createdAt),
      lastUsedText: k.lastUsedAt === null ? 'Never' : formatTime(k.lastUsedAt),
      revokedText: k.revokedAt === null ? '' : formatTime(k.revokedAt),
    }));
    return renderPage(
      'campaign',
      {
        title: campaign.name,
        session,
        section: 'campaigns',
        org: session.org,
        csrfToken: session.csrfToken,
        canManage: canManage(session),
        campaign,
        agent: campaign.agentId ? (agents.get(campaign.agentId) ?? campaign.agentId) : 'none',
        template: templateText(campaign),
        statuses: STATUSES,
        status: STATUS_WORDS[campaign.status],
        filter: status,
        filterLabel: status ? STATUS_LABELS[status] : undefined,
        pageSize: PAGE_SIZE,
        progress: progressOf(campaign.counts),
        deliveries: deliveries.data.map((d) => ({
          to: d.to,
          status: STATUS_LABELS[d.status],
          error: d.error ?? '—',
          created: formatTime(d.createdAt),
          sent: d.sentAt === null ? '—' : formatTime(d.sentAt),
          updated: formatTime(d.updatedAt),
        })),
        pager: pagerOf(pagePath(campaign.id), { status }, deliveries),
        keys: keyRows.filter((k) => k.revokedText === ''),
        revokedKeys: keyRows.filter((k) => k.revokedText !== ''),
        sends: sends ?? (await segmentSendsSection(ctx, session, campaign.id)),
        analytics: await campaignAnalyticsSection(ctx, session, campaign.id),
      },
      dialog,
    );
  };

  const keyDialog = (session: Session, campaign: Campaign, label: string, open: boolean, error?: string) =>
    renderPartial('campaign-key-dialog', { csrfToken: session.csrfToken, campaign, label, open, error });
  const revokeDialog = (session: Session, campaignId: string, apiKey: ApiKey, open: boolean) =>
    renderPartial('revoke-dialog', {
      csrfToken: session.csrfToken,
      apiKey,
      open,
      base: `${pagePath(campaignId)}/keys`,
      back: pagePath(campaignId),
    });
  const removeDialog = async (session: Session, campaignId: string, open: boolean) => {
    const campaign = await campaignWithCounts(db, session.org.id, campaignId);
    return renderPartial('remove-campaign-dialog', {
      csrfToken: session.csrfToken,
      campaign,
      queued: campaign.counts.queued,
      open,
    });
  };
  registerCampaignAnalyticsPages(app, ctx, kit);
  registerSegmentSendPages(app, ctx, kit, (session, campaignId, sends) =>
    campaignPage(session, campaignId, {}, undefined, sends),
  );
  const mayCreate = (session: Session) => canManage(session) && session.org.plan === 'paid';

  app.get('/dashboard/campaigns/:campaignId', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const { campaignId } = request.params as { campaignId: string };
    const query = request.query as Record<string, string | undefined>;
    let dialog: string | undefined;
    if (query.create !== undefined && mayCreate(session)) {
      dialog = keyDialog(session, await getCampaign(db, session.org.id, campaignId), '', true);
    } else if (query.revoke && canManage(session)) {
      dialog = revokeDialog(session, campaignId, await findCampaignKey(session.org.id, campaignId, query.revoke), true);
    } else if (query.remove !== undefined && canManage(session)) {
      dialog = await removeDialog(session, campaignId, true);
    }
    return html(reply, await campaignPage(session, campaignId, query, dialog));
  });

  app.get('/dashboard/campaigns/:campaignId/remove', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { campaignId } = request.params as { campaignId: string };
    if (!isHtmx(request)) return reply.redirect(`${pagePath(campaignId)}?remove=1`, 303);
    return html(reply, await removeDialog(session, campaignId, false));
  });
  app.post('/dashboard/campaigns/:campaignId/:change', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { campaignId, change } = request.params as { campaignId: string; change: string };
    if (change === 'remove') {
      const removed = await removeCampaign(db, clock, {
        orgId: session.org.id,
        campaignId,
        actor: session.user.email,
      });
      return redirectAfterPost(request, reply, `/dashboard/campaigns?removed=${encodeURIComponent(removed.name)}`);
    }
    const actor = session.user.email;
    if (change === 'pause') await pauseCampaign(db, clock, session.org.id, campaignId, actor);
    else if (change === 'resume') await resumeCampaign(db, ctx.jobs, clock, session.org.id, campaignId, actor);
    else throw new AppError('NOT_FOUND', 'No such action.');
    // Pause and Resume also sit in the campaigns list, which they return to.
    const back = field(request.body, 'back') === 'list' ? '/dashboard/campaigns' : pagePath(campaignId);
    return redirectAfterPost(request, reply, back);
  });

  app.get('/dashboard/campaigns/:campaignId/keys/new', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { campaignId } = request.params as { campaignId: string };
    const campaign = await getCampaign(db, session.org.id, campaignId);
    if (!isHtmx(request)) return reply.redirect(`${pagePath(campaign.id)}?create=1`, 303);
    return html(reply, keyDialog(session, campaign, '', false));
  });
  app.post('/dashboard/campaigns/:campaignId/keys', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { campaignId } = request.params as { campaignId: string };
    const campaign = await getCampaign(db, session.org.id, campaignId);
    const label = field(request.body, 'label');
    const htmx = isHtmx(request);
    let created: { apiKey: ApiKey; key: string };
    try {
      created = await createKey(db, clock, ctx.region.region, {
        orgId: session.org.id,
        label,
        scope: 'campaign',
        campaignId: campaign.id,
        permissions: ['campaigns'],
        actor: session.user.email,
      });
    } catch (err) {
      if (!isAppError(err) || err.code !== 'INVALID_BODY') throw err;
      const message = err.message.charAt(0).toUpperCase() + err.message.slice(1);
      const dialog = keyDialog(session, campaign, label, !htmx, `${message}.`);
      // htmx swaps only successful answers by default, so the dialog with its explanation is a 200 there.
      return htmx ? html(reply, dialog) : html(reply, await campaignPage(session, campaign.id, {}, dialog), 400);
    }
    const dialog = renderPartial('created-dialog', { ...created, open: !htmx, back: pagePath(campaign.id) });
    return htmx ? html(reply, dialog) : html(reply, await campaignPage(session, campaign.id, {}, dialog));
  });
  app.get('/dashboard/campaigns/:campaignId/keys/:keyId/revoke', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { campaignId, keyId } = request.params as { campaignId: string; keyId: string };
    const apiKey = await findCampaignKey(session.org.id, campaignId, keyId);
    if (!isHtmx(request)) {
      return reply.redirect(`${pagePath(campaignId)}?revoke=${encodeURIComponent(keyId)}`, 303);
    }
    return html(reply, revokeDialog(session, campaignId, apiKey, false));
  });
  app.post('/dashboard/campaigns/:campaignId/keys/:keyId/revoke', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { campaignId, keyId } = request.params as { campaignId: string; keyId: string };
    const apiKey = await findCampaignKey(session.org.id, campaignId, keyId);
    await revokeKey(db, clock, session.org.id, apiKey.id, session.user.email);
    return redirectAfterPost(request, reply, pagePath(campaignId));
  });
}
