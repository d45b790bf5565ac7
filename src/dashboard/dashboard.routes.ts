import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { countWaiting } from '../inbox/inbox.service.js';
import { AppError, isAppError, statusOf } from '../shared/errors.js';
import { registerAgentPages } from './agents.pages.js';
import { registerApiKeyPages } from './api-keys.pages.js';
import { registerAuditPages } from './audit.pages.js';
import { registerCampaignCreatePages } from './campaign-create.pages.js';
import { registerCampaignPages } from './campaigns.pages.js';
import { registerConversationPages } from './conversations.pages.js';
import { registerEndUserPages } from './end-users.pages.js';
import { registerHoldingTextPages } from './holding-text.pages.js';
import { registerHomePages } from './home.pages.js';
import { registerHookPages } from './hooks.pages.js';
import { registerInboxPages } from './inbox.pages.js';
import { registerInboxActionPages } from './inbox-actions.pages.js';
import { registerInboxStream } from './inbox-stream.js';
import { registerMediaPages } from './media.pages.js';
import { registerOptOutPages } from './opt-out.pages.js';
import {
  cookies,
  field,
  HIDDEN,
  HOME_PATH,
  html,
  isHtmx,
  type PageKit,
  parseForm,
  SESSION_COOKIE,
  setCookie,
} from './page-kit.js';
import { registerPeoplePages } from './people.pages.js';
import { registerSegmentPages } from './segments.pages.js';
import { registerSendingRulePages } from './sending-rules.pages.js';
import { type Session, sameToken, sessionOf } from './session.service.js';
import { registerSettingsPages } from './settings.pages.js';
import { registerSignInPages } from './sign-in.pages.js';
import { staticAsset } from './static.js';
import { canManage } from './user.service.js';
import { renderPage } from './views.js';

/** Pages load only what Parley serves; no inline script or style, no framing. */
const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

declare module 'fastify' {
  interface FastifyRequest {
    dashboardSession: Session | null;
  }
}

/**
 * The dashboard under /dashboard: its forms, headers, error pages, the session guard and the
 * static files here; the pages in one file per page family (*.pages.ts), each named for its route.
 */
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

  /** An error page, in the frame with its navigation when the person is signed in. */
  const pageError = (heading: string, message: string, session?: Session | null) =>
    renderPage('error', { title: heading, heading, message, ...(session ? { session } : {}) });
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
    return html(reply, pageError(heading, message, request.dashboardSession), status);
  });

  /** Every page but sign-in: a live session, and for a change the session's CSRF token. */
  const requireSession = async (request: FastifyRequest, reply: FastifyReply) => {
    const token = cookies(request)[SESSION_COOKIE];
    const session = await sessionOf(db, clock, config, token);
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
    // A whole page shows the Inbox's count in its navigation; a fragment (htmx) does not need it.
    if (request.method === 'GET' && !isHtmx(request)) session.waiting = await countWaiting(db, session.org.id);
    request.dashboardSession = session;
  };
  const kit: PageKit = {
    signedIn: { ...HIDDEN, preHandler: requireSession },
    sessionOf: (request) => {
      const session = request.dashboardSession;
      if (!session) throw new AppError('UNAUTHORIZED', 'Sign in first.');
      return session;
    },
    mustManage: (session) => {
      if (!canManage(session.user.role)) {
        throw new AppError('FORBIDDEN', 'Only owners and admins of the organization can make this change.');
      }
    },
  };

  app.get('/dashboard/static/:file', HIDDEN, async (request, reply) => {
    const asset = staticAsset((request.params as { file: string }).file);
    if (!asset) throw new AppError('NOT_FOUND', 'No such file.');
    reply.header('cache-control', 'public, max-age=3600');
    return reply.type(asset.type).send(asset.body);
  });

  // The way in from a browser: the server's own address opens the dashboard.
  app.get('/', HIDDEN, async (_request, reply) => reply.redirect(HOME_PATH, 303));
  app.get('/dashboard/', HIDDEN, async (_request, reply) => reply.redirect(HOME_PATH, 303));
  // Any other address under /dashboard is a page saying so (signed in: in the frame), not JSON.
  app.all('/dashboard/*', HIDDEN, async (request) => {
    request.dashboardSession = (await sessionOf(db, clock, config, cookies(request)[SESSION_COOKIE])) ?? null;
    throw new AppError(
      'NOT_FOUND',
      'There is no such page in the dashboard. Check the address, or start again from Home.',
    );
  });

  registerSignInPages(app, ctx, kit);
  registerHomePages(app, ctx, kit);
  registerSettingsPages(app, kit);
  registerOptOutPages(app, ctx, kit);
  registerApiKeyPages(app, ctx, kit);
  registerAgentPages(app, ctx, kit);
  registerHookPages(app, ctx, kit);
  registerConversationPages(app, ctx, kit);
  registerMediaPages(app, ctx, kit);
  registerCampaignCreatePages(app, ctx, kit);
  registerCampaignPages(app, ctx, kit);
  registerEndUserPages(app, ctx, kit);
  registerSegmentPages(app, ctx, kit);
  registerSendingRulePages(app, ctx, kit);
  registerAuditPages(app, ctx, kit);
  registerPeoplePages(app, ctx, kit);
  registerInboxPages(app, ctx, kit);
  registerInboxActionPages(app, ctx, kit);
  registerInboxStream(app, ctx, kit);
  registerHoldingTextPages(app, ctx, kit);
}
