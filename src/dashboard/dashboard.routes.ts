import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { listAgents } from '../agents/agent.service.js';
import { type AuditEntry, listAudit } from '../audit/audit.service.js';
import { listCampaigns } from '../campaigns/campaign.service.js';
import type { AppContext } from '../context.js';
import { PERMISSION_LABELS, SCOPE_LABELS } from '../keys/index.js';
import { type ApiKey, createKey, listKeys, revokeKey } from '../keys/key.service.js';
import { setOrganizationPlan } from '../orgs/org.service.js';
import { AppError, isAppError, statusOf } from '../shared/errors.js';
import { registerAgentPages } from './agent.pages.js';
import { registerCampaignPages } from './campaign.pages.js';
import { endSession, type Session, sameToken, sessionOf, signIn } from './session.service.js';
import { staticAsset } from './static.js';
import { canChangePlan, canManage } from './user.service.js';
import { renderPage, renderPartial } from './views.js';

const SESSION_COOKIE = 'parley_session';
const LOGIN_CSRF_COOKIE = 'parley_login_csrf';
const KEYS_PATH = '/dashboard/settings/integrations/api-keys';
/** Not part of the API description. */
const HIDDEN = { schema: { hide: true } } as const;

/** Pages load only what Parley serves; no inline script or style, no framing. */
const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

type Form = Record<string, string | string[]>;

declare module 'fastify' {
  interface FastifyRequest {
    dashboardSession: Session | null;
  }
}

function parseForm(body: string): Form {
  const form: Form = {};
  for (const [name, value] of new URLSearchParams(body)) {
    const prior = form[name];
    if (prior === undefined) form[name] = value;
    else form[name] = Array.isArray(prior) ? [...prior, value] : [prior, value];
  }
  return form;
}

const field = (form: unknown, name: string): string => {
  const value = (form as Form | undefined)?.[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
};
const fields = (form: unknown, name: string): string[] => {
  const value = (form as Form | undefined)?.[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
};

function cookies(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = decodeURIComponent(part.slice(i + 1).trim());
  }
  return out;
}

function setCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  name: string,
  value: string,
  options: { path: string; maxAge?: number },
): void {
  const parts = [`${name}=${encodeURIComponent(value)}`, `Path=${options.path}`, 'HttpOnly', 'SameSite=Lax'];
  if (options.maxAge !== undefined) parts.push(`Max-Age=${options.maxAge}`);
  // The request came over HTTPS (directly, or through a trusted proxy: PARLEY_TRUST_PROXY).
  if (request.protocol === 'https') parts.push('Secure');
  // Fastify appends to set-cookie rather than replacing it.
  reply.header('set-cookie', parts.join('; '));
}

const isHtmx = (request: FastifyRequest) => request.headers['hx-request'] === 'true';

const formatTime = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

function html(reply: FastifyReply, body: string, status = 200) {
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

/** After a change: a full page load of `to` (htmx follows HX-Redirect; a plain form, the 303). */
function redirectAfterPost(request: FastifyRequest, reply: FastifyReply, to: string) {
  if (isHtmx(request)) return reply.header('hx-redirect', to).code(204).send();
  return reply.redirect(to, 303);
}

const AUDIT_WORDS: Record<string, string> = {
  'key.created': 'Created API key',
  'key.revoked': 'Revoked API key',
  'plan.changed': 'Changed the plan',
  'endpoint.created': 'Created endpoint',
  'endpoint.deleted': 'Deleted endpoint',
  'user.created': 'Added person',
  'user.removed': 'Removed person',
  'user.password_changed': 'Changed password',
  'campaign.created': 'Created campaign',
  'campaign.removed': 'Removed campaign',
  'campaign.paused': 'Paused campaign',
  'campaign.resumed': 'Resumed campaign',
};

function auditRow(entry: AuditEntry, keyNames: Map<string, string>) {
  const d = entry.details ?? {};
  const text = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');
  let target = `${entry.targetType} ${entry.targetId}`;
  if (entry.targetType === 'api_key') {
    target = keyNames.get(entry.targetId) ?? (d.label ? `${text(d.label)} (${text(d.prefix)})` : entry.targetId);
  } else if (entry.targetType === 'user') target = text(d.email) || entry.targetId;
  else if (entry.targetType === 'endpoint') target = text(d.url) || entry.targetId;
  else if (entry.action === 'plan.changed') target = `${text(d.from)} → ${text(d.to)}`;
  return {
    when: formatTime(entry.at),
    actor: entry.actor === 'cli' ? 'Command line (cli)' : entry.actor,
    what: AUDIT_WORDS[entry.action] ?? entry.action,
    target,
  };
}

export async function dashboardRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const { db, clock } = ctx;
  const config = ctx.config.dashboard;

  app.decorateRequest('dashboardSession', null);
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 64 * 1024 },
    (_request, body, done) => done(null, parseForm(String(body))),
  );
  // Runs after the app's own onSend (which writes the API's CSP): pages need their stylesheet and scripts.
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('content-security-policy', DASHBOARD_CSP);
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    done(null, payload);
  });

  const pageError = (heading: string, message: string) => renderPage('error', { title: heading, heading, message });
  app.setErrorHandler((err, request, reply) => {
    const status = isAppError(err)
      ? statusOf(err.code)
      : typeof (err as { statusCode?: unknown }).statusCode === 'number'
        ? Number((err as { statusCode: number }).statusCode)
        : 500;
    if (status >= 500) request.log.error({ err }, 'dashboard error');
    const message =
      status >= 500
        ? 'Something went wrong on our side. Try again in a moment.'
        : err instanceof Error
          ? err.message
          : 'The request was refused.';
    const heading = status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : 'Something is wrong';
    return html(reply, pageError(heading, message), status);
  });

  /** Every page but sign-in: a live session, and for a change the session's CSRF token. */
  const requireSession = async (request: FastifyRequest, reply: FastifyReply) => {
    const token = cookies(request)[SESSION_COOKIE];
    const session = await sessionOf(db, clock, config.sessionIdleMs, token);
    if (!session) {
      if (token) setCookie(request, reply, SESSION_COOKIE, '', { path: '/dashboard', maxAge: 0 });
      const to = `/dashboard/login${token ? '?ended=1' : ''}`;
      if (isHtmx(request)) return reply.header('hx-redirect', to).code(401).send();
      if (request.method !== 'GET') return html(reply, pageError('Signed out', 'Sign in again to continue.'), 401);
      return reply.redirect(to, 303);
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const given = field(request.body, '_csrf') || String(request.headers['x-csrf-token'] ?? '');
      if (!given || !sameToken(given, session.csrfToken)) {
        throw new AppError(
          'FORBIDDEN',
          'This form did not come from your dashboard session (missing or wrong CSRF token). Reload the page and try again.',
        );
      }
    }
    request.dashboardSession = session;
  };
  const sessionOfRequest = (request: FastifyRequest): Session => {
    const session = request.dashboardSession;
    if (!session) throw new AppError('UNAUTHORIZED', 'Sign in first.');
    return session;
  };
  const mustManage = (session: Session) => {
    if (!canManage(session.user.role)) {
      throw new AppError('FORBIDDEN', 'Only owners and admins of the organization can make this change.');
    }
  };
  const signedIn = { ...HIDDEN, preHandler: requireSession };

  app.get('/dashboard/static/:file', HIDDEN, async (request, reply) => {
    const asset = staticAsset((request.params as { file: string }).file);
    if (!asset) throw new AppError('NOT_FOUND', 'No such file.');
    reply.header('cache-control', 'public, max-age=3600');
    return reply.type(asset.type).send(asset.body);
  });

  app.get('/dashboard', HIDDEN, async (_request, reply) => reply.redirect(KEYS_PATH, 303));
  app.get('/dashboard/', HIDDEN, async (_request, reply) => reply.redirect(KEYS_PATH, 303));

  // Sign-in. Its own CSRF token (no session yet): a random value in a cookie and in the form.
  const loginPage = (
    request: FastifyRequest,
    reply: FastifyReply,
    data: { error?: string; notice?: string; email?: string },
    status = 200,
  ) => {
    const loginCsrf = randomBytes(24).toString('base64url');
    setCookie(request, reply, LOGIN_CSRF_COOKIE, loginCsrf, { path: '/dashboard/login' });
    return html(reply, renderPage('login', { title: 'Sign in', loginCsrf, ...data }), status);
  };
  app.get('/dashboard/login', HIDDEN, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const notice =
      query.ended !== undefined
        ? 'Your session has ended. Sign in again.'
        : query['signed-out'] !== undefined
          ? 'You have signed out.'
          : undefined;
    return loginPage(request, reply, notice ? { notice } : {});
  });
  app.post('/dashboard/login', HIDDEN, async (request, reply) => {
    const given = field(request.body, '_csrf');
    const expected = cookies(request)[LOGIN_CSRF_COOKIE] ?? '';
    if (!given || !expected || !sameToken(given, expected)) {
      return loginPage(request, reply, { error: 'The sign-in form expired. Try again.' }, 403);
    }
    const email = field(request.body, 'email');
    try {
      const { token } = await signIn(db, clock, config, {
        email,
        password: field(request.body, 'password'),
        address: request.ip,
      });
      // A new session ID at every sign-in; the one the browser had before (if any) ends.
      await endSession(db, cookies(request)[SESSION_COOKIE]);
      setCookie(request, reply, SESSION_COOKIE, token, { path: '/dashboard' });
      setCookie(request, reply, LOGIN_CSRF_COOKIE, '', { path: '/dashboard/login', maxAge: 0 });
      return reply.redirect(KEYS_PATH, 303);
    } catch (err) {
      if (isAppError(err) && (err.code === 'UNAUTHORIZED' || err.code === 'RATE_LIMITED')) {
        return loginPage(request, reply, { error: err.message, email }, statusOf(err.code));
      }
      throw err;
    }
  });
  app.post('/dashboard/logout', signedIn, async (request, reply) => {
    await endSession(db, cookies(request)[SESSION_COOKIE]);
    setCookie(request, reply, SESSION_COOKIE, '', { path: '/dashboard', maxAge: 0 });
    return redirectAfterPost(request, reply, '/dashboard/login?signed-out=1');
  });

  app.get('/dashboard/settings', signedIn, async (request, reply) => {
    const session = sessionOfRequest(request);
    return html(reply, renderPage('settings', { title: 'Settings', session, section: 'settings' }));
  });
  app.get('/dashboard/settings/integrations', signedIn, async (request, reply) => {
    const session = sessionOfRequest(request);
    return html(reply, renderPage('integrations', { title: 'Integrations', session, section: 'settings' }));
  });

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
      revoked: k.revokedAt !== null,
      stateText: k.revokedAt === null ? 'Active' : `Revoked ${formatTime(k.revokedAt)}`,
    }));
  };

  interface CreateValues {
    label: string;
    scope: string;
    agent: string;
    permissions: string[];
  }
  const emptyValues: CreateValues = { label: '', scope: 'organization', agent: '', permissions: [] };
  const createDialog = async (session: Session, values: CreateValues, open: boolean, error?: string) =>
    renderPartial('createDialog', {
      csrfToken: session.csrfToken,
      agents: await listAgents(db, session.org.id),
      values,
      open,
      error,
    });

  /** The panel page, optionally with a dialog open (the no-JavaScript path of every dialog). */
  const keysPage = async (session: Session, dialog?: string) => {
    const keys = session.org.plan === 'paid' ? await listKeys(db, session.org.id) : [];
    return renderPage(
      'keys',
      {
        title: 'API Keys',
        session,
        section: 'settings',
        org: session.org,
        keys: await keyRows(session.org.id, keys),
        canManage: canManage(session.user.role),
        canUpgrade: canChangePlan(session.user.role),
        upgradeUrl: config.upgradeUrl,
      },
      dialog,
    );
  };
  const findKey = async (orgId: string, keyId: string) => {
    const key = (await listKeys(db, orgId)).find((k) => k.id === keyId);
    if (!key) throw new AppError('NOT_FOUND', 'No such key in your organization.');
    return key;
  };
  const revokeDialog = (session: Session, apiKey: ApiKey, open: boolean) =>
    renderPartial('revokeDialog', { csrfToken: session.csrfToken, apiKey, open });
  const upgradeDialog = (session: Session, open: boolean) =>
    renderPartial('upgradeDialog', { csrfToken: session.csrfToken, org: session.org, open });
  const mustUpgrade = (session: Session) => {
    if (!canChangePlan(session.user.role)) {
      throw new AppError('FORBIDDEN', 'Only an owner of the organization can change its plan.');
    }
  };

  app.get(KEYS_PATH, signedIn, async (request, reply) => {
    const session = sessionOfRequest(request);
    const query = request.query as Record<string, string | undefined>;
    let dialog: string | undefined;
    if (query.create !== undefined && canManage(session.user.role) && session.org.plan === 'paid') {
      dialog = await createDialog(session, emptyValues, true);
    } else if (query.revoke && canManage(session.user.role)) {
      dialog = revokeDialog(session, await findKey(session.org.id, query.revoke), true);
    } else if (query.upgrade !== undefined && canChangePlan(session.user.role) && !config.upgradeUrl) {
      dialog = upgradeDialog(session, true);
    }
    return html(reply, await keysPage(session, dialog));
  });
  app.get(`${KEYS_PATH}/new`, signedIn, async (request, reply) => {
    const session = sessionOfRequest(request);
    mustManage(session);
    if (!isHtmx(request)) return reply.redirect(`${KEYS_PATH}?create=1`, 303);
    return html(reply, await createDialog(session, emptyValues, false));
  });
  app.post(KEYS_PATH, signedIn, async (request, reply) => {
    const session = sessionOfRequest(request);
    mustManage(session);
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
      return htmx ? html(reply, dialog) : html(reply, await keysPage(session, dialog), 400);
    }
    const dialog = renderPartial('createdDialog', { ...created, open: !htmx });
    return htmx ? html(reply, dialog) : html(reply, await keysPage(session, dialog));
  });
  app.get(`${KEYS_PATH}/:keyId/revoke`, signedIn, async (request, reply) => {
    const session = sessionOfRequest(request);
    mustManage(session);
    const { keyId } = request.params as { keyId: string };
    if (!isHtmx(request)) return reply.redirect(`${KEYS_PATH}?revoke=${encodeURIComponent(keyId)}`, 303);
    return html(reply, revokeDialog(session, await findKey(session.org.id, keyId), false));
  });
  app.post(`${KEYS_PATH}/:keyId/revoke`, signedIn, async (request, reply) => {
    const session = sessionOfRequest(request);
    mustManage(session);
    const { keyId } = request.params as { keyId: string };
    await revokeKey(db, clock, session.org.id, keyId, session.user.email);
    return redirectAfterPost(request, reply, KEYS_PATH);
  });

  app.get('/dashboard/upgrade', signedIn, async (request, reply) => {
    const session = sessionOfRequest(request);
    mustUpgrade(session);
    if (config.upgradeUrl) return reply.redirect(config.upgradeUrl, 303);
    if (!isHtmx(request)) return reply.redirect(`${KEYS_PATH}?upgrade=1`, 303);
    return html(reply, upgradeDialog(session, false));
  });
  app.post('/dashboard/upgrade', signedIn, async (request, reply) => {
    const session = sessionOfRequest(request);
    mustUpgrade(session);
    if (config.upgradeUrl) {
      throw new AppError('FORBIDDEN', 'Plans are changed on the billing page; use the Upgrade button.');
    }
    await setOrganizationPlan(db, session.org.id, 'paid', { actor: session.user.email, clock });
    return redirectAfterPost(request, reply, KEYS_PATH);
  });

  const kit = { signedIn, sessionOf: sessionOfRequest, mustManage, html, field, formatTime };
  registerAgentPages(app, ctx, kit);
  registerCampaignPages(app, ctx, { ...kit, isHtmx, redirectAfterPost });

  app.get('/dashboard/audit', signedIn, async (request, reply) => {
    const session = sessionOfRequest(request);
    const keys = await listKeys(db, session.org.id);
    const keyNames = new Map(keys.map((k) => [k.id, `${k.label} (${k.prefix})`]));
    const entries = (await listAudit(db, session.org.id, { limit: 500 })).map((e) => auditRow(e, keyNames));
    return html(
      reply,
      renderPage('audit', { title: 'Audit log', session, section: 'audit', org: session.org, entries }),
    );
  });
}
