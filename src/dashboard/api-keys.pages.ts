import type { FastifyInstance } from 'fastify';
import { listAgents } from '../agents/agent.service.js';
import { listCampaigns } from '../campaigns/campaign.service.js';
import type { AppContext } from '../context.js';
import { type ApiKey, createKey, findKeys, PERMISSION_LABELS, revokeKey, SCOPE_LABELS } from '../keys/key.service.js';
import { pageOfKeys } from '../keys/key-lists.service.js';
import { setOrganizationPlan } from '../orgs/org.service.js';
import { AppError, isAppError } from '../shared/errors.js';
import { field, fields, formatTime, html, isHtmx, KEYS_PATH, type PageKit, redirectAfterPost } from './page-kit.js';
import { type PageParams, pageRequestOf, pagerOf } from './pager.js';
import type { Session } from './session.service.js';
import { canChangePlan, canManage } from './user.service.js';
import { renderPage, renderPartial } from './views.js';

interface CreateValues {
  label: string;
  scope: string;
  agent: string;
  permissions: string[];
}
const REVOKED_PARAMS: PageParams = { cursor: 'revoked_cursor', before: 'revoked_before' };
const emptyValues: CreateValues = { label: '', scope: 'organization', agent: '', permissions: [] };

/**
 * API Keys (/dashboard/settings/integrations/api-keys): the organization's keys, and their
 * dialogs (create, created, revoke); on the free plan, the upgrade (/dashboard/upgrade).
 */
export function registerApiKeyPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;
  const config = ctx.config.dashboard;

  /** The rows of the keys table, in words. */
  const keyRows = async (orgId: string, keys: ApiKey[]) => {
    const agents = new Map((await listAgents(db, orgId)).map((a) => [a.id, a.name]));
    const campaigns = keys.some((k) => k.campaignId)
      ? new Map((await listCampaigns(db, orgId)).map((c) => [c.id, c.name]))
      : new Map<string, string>();
    return keys.map((k) => ({
      id: k.id,
      label: k.label,
      prefix: k.prefix,
      scopeText:
        k.scope === 'campaign'
          ? `Campaign: ${campaigns.get(k.campaignId ?? '') ?? k.campaignId}`
          : SCOPE_LABELS[k.scope],
      agentName: k.agentId ? (agents.get(k.agentId) ?? k.agentId) : '—',
      permissionsText: k.permissions.map((p) => PERMISSION_LABELS[p]).join(', '),
      createdText: formatTime(k.createdAt),
      lastUsedText: k.lastUsedAt === null ? 'Never' : formatTime(k.lastUsedAt),
      revokedText: k.revokedAt === null ? '' : formatTime(k.revokedAt),
    }));
  };

  const createDialog = async (session: Session, values: CreateValues, open: boolean, error?: string) =>
    renderPartial('create-dialog', {
      csrfToken: session.csrfToken,
      agents: await listAgents(db, session.org.id),
      values,
      open,
      error,
    });

  /**
   * The panel page, optionally with a dialog open (the no-JavaScript path of every dialog): the
   * active keys a page at a time, and below them the revoked ones, a page at a time of their own.
   */
  const keysPage = async (session: Session, query: Record<string, string | undefined>, dialog?: string) => {
    const paid = session.org.plan === 'paid';
    const none = { data: [], next: null, previous: null, total: 0 };
    const [active, revoked] = paid
      ? await Promise.all([
          pageOfKeys(db, session.org.id, { revoked: false }, pageRequestOf(query)),
          pageOfKeys(db, session.org.id, { revoked: true }, pageRequestOf(query, REVOKED_PARAMS)),
        ])
      : [none, none];
    const positions = {
      cursor: query.cursor,
      before: query.before,
      revoked_cursor: query.revoked_cursor,
      revoked_before: query.revoked_before,
    };
    return renderPage(
      'keys',
      {
        title: 'API Keys',
        session,
        section: 'settings',
        org: session.org,
        keys: await keyRows(session.org.id, active.data),
        pager: pagerOf(KEYS_PATH, positions, active),
        revokedKeys: await keyRows(session.org.id, revoked.data),
        revokedTotal: revoked.total,
        revokedPager: pagerOf(KEYS_PATH, positions, revoked, REVOKED_PARAMS, 'revoked keys'),
        // A person paging through the revoked keys finds them still shown.
        revokedOpen: Boolean(query.revoked_cursor || query.revoked_before),
        canManage: canManage(session.user.role),
        canUpgrade: canChangePlan(session.user.role),
        upgradeUrl: config.upgradeUrl,
      },
      dialog,
    );
  };
  const findKey = async (orgId: string, keyId: string) => {
    const [key] = await findKeys(db, orgId, [keyId]);
    if (!key) throw new AppError('NOT_FOUND', 'No such key in your organization.');
    return key;
  };
  const revokeDialog = (session: Session, apiKey: ApiKey, open: boolean) =>
    renderPartial('revoke-dialog', { csrfToken: session.csrfToken, apiKey, open });
  const upgradeDialog = (session: Session, open: boolean) =>
    renderPartial('upgrade-dialog', { csrfToken: session.csrfToken, org: session.org, open });
  const mustUpgrade = (session: Session) => {
    if (!canChangePlan(session.user.role)) {
      throw new AppError('FORBIDDEN', 'Only an owner of the organization can change its plan.');
    }
  };

  app.get(KEYS_PATH, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const query = request.query as Record<string, string | undefined>;
    let dialog: string | undefined;
    if (query.create !== undefined && canManage(session.user.role) && session.org.plan === 'paid') {
      dialog = await createDialog(session, emptyValues, true);
    } else if (query.revoke && canManage(session.user.role)) {
      dialog = revokeDialog(session, await findKey(session.org.id, query.revoke), true);
    } else if (query.upgrade !== undefined && canChangePlan(session.user.role) && !config.upgradeUrl) {
      dialog = upgradeDialog(session, true);
    }
    return html(reply, await keysPage(session, query, dialog));
  });
  app.get(`${KEYS_PATH}/new`, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    if (!isHtmx(request)) return reply.redirect(`${KEYS_PATH}?create=1`, 303);
    return html(reply, await createDialog(session, emptyValues, false));
  });
  app.post(KEYS_PATH, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const values: CreateValues = {
      label: field(request.body, 'label'),
      scope: field(request.body, 'scope') || 'organization',
      agent: field(request.body, 'agent'),
      permissions: fields(request.body, 'permissions'),
    };
    const htmx = isHtmx(request);
    let created: { apiKey: ApiKey; key: string };
    try {
      if (values.scope !== 'organization' && values.scope !== 'agent') {
        throw new AppError('INVALID_BODY', 'Choose a scope: Whole organization or Specific AI agent.');
      }
      if (values.scope === 'agent' && !values.agent) {
        throw new AppError('INVALID_BODY', 'Choose the agent this key is for.');
      }
      created = await createKey(db, clock, ctx.region.region, {
        orgId: session.org.id,
        label: values.label,
        scope: values.scope,
        ...(values.scope === 'agent' ? { agentId: values.agent } : {}),
        permissions: values.permissions,
        actor: session.user.email,
      });
    } catch (err) {
      if (!isAppError(err) || (err.code !== 'INVALID_BODY' && err.code !== 'NOT_FOUND')) throw err;
      const message = err.message.charAt(0).toUpperCase() + err.message.slice(1);
      const dialog = await createDialog(session, values, !htmx, message.replace(/ \(--agent\)/, ''));
      // htmx swaps only successful answers by default, so the dialog with its explanation is a 200 there.
      return htmx ? html(reply, dialog) : html(reply, await keysPage(session, {}, dialog), 400);
    }
    const dialog = renderPartial('created-dialog', { ...created, open: !htmx });
    return htmx ? html(reply, dialog) : html(reply, await keysPage(session, {}, dialog));
  });
  app.get(`${KEYS_PATH}/:keyId/revoke`, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { keyId } = request.params as { keyId: string };
    if (!isHtmx(request)) return reply.redirect(`${KEYS_PATH}?revoke=${encodeURIComponent(keyId)}`, 303);
    return html(reply, revokeDialog(session, await findKey(session.org.id, keyId), false));
  });
  app.post(`${KEYS_PATH}/:keyId/revoke`, kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    kit.mustManage(session);
    const { keyId } = request.params as { keyId: string };
    await revokeKey(db, clock, session.org.id, keyId, session.user.email);
    return redirectAfterPost(request, reply, KEYS_PATH);
  });

  app.get('/dashboard/upgrade', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    mustUpgrade(session);
    if (config.upgradeUrl) return reply.redirect(config.upgradeUrl, 303);
    if (!isHtmx(request)) return reply.redirect(`${KEYS_PATH}?upgrade=1`, 303);
    return html(reply, upgradeDialog(session, false));
  });
  app.post('/dashboard/upgrade', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    mustUpgrade(session);
    if (config.upgradeUrl) {
      throw new AppError('FORBIDDEN', 'Plans are changed on the billing page; use the Upgrade button.');
    }
    await setOrganizationPlan(db, session.org.id, 'paid', { actor: session.user.email, clock });
    return redirectAfterPost(request, reply, KEYS_PATH);
  });
}
