import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { isAppError, statusOf } from '../shared/errors.js';
import {
  cookies,
  field,
  HIDDEN,
  HOME_PATH,
  html,
  LOGIN_CSRF_COOKIE,
  type PageKit,
  redirectAfterPost,
  SESSION_COOKIE,
  setCookie,
} from './page-kit.js';
import { endSession, sameToken, signIn } from './session.service.js';
import { renderPage } from './views.js';

/**
 * Signing in (/dashboard/login) and out (/dashboard/logout). The sign-in form has its own CSRF
 * token (no session yet): a random value in a cookie and in the form.
 */
export function registerSignInPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  const { db, clock } = ctx;
  const config = ctx.config.dashboard;

  const loginPage = (
    request: FastifyRequest,
    reply: FastifyReply,
    data: { error?: string; notice?: string; email?: string },
    status = 200,
  ) => {
    const loginCsrf = randomBytes(24).toString('base64url');
    setCookie(request, reply, LOGIN_CSRF_COOKIE, loginCsrf, { path: '/dashboard/login' });
    return html(reply, renderPage('login', { title: 'Sign in', signInPage: true, loginCsrf, ...data }), status);
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
      return reply.redirect(HOME_PATH, 303);
    } catch (err) {
      if (isAppError(err) && (err.code === 'UNAUTHORIZED' || err.code === 'RATE_LIMITED')) {
        return loginPage(request, reply, { error: err.message, email }, statusOf(err.code));
      }
      throw err;
    }
  });
  app.post('/dashboard/logout', kit.signedIn, async (request, reply) => {
    await endSession(db, cookies(request)[SESSION_COOKIE]);
    setCookie(request, reply, SESSION_COOKIE, '', { path: '/dashboard', maxAge: 0 });
    return redirectAfterPost(request, reply, '/dashboard/login?signed-out=1');
  });
}
