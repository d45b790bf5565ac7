import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { AppContext } from '../../src/context.js';
import { createUser, type Role } from '../../src/dashboard/user.service.js';
import { randomBase62 } from '../../src/shared/ids.js';

export const PASSWORD = 'correct horse battery staple';

/** A person of the organization, with a unique email. */
export async function makeUser(ctx: AppContext, orgId: string, role: Role = 'owner') {
  return createUser(
    ctx.db,
    ctx.clock,
    {
      orgId,
      email: `${role}-${randomBase62(8).toLowerCase()}@example.com`,
      role,
      password: PASSWORD,
      actor: 'cli',
    },
    ctx.config.dashboard.passwordCost,
  );
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** The `name=value` part of a Set-Cookie line for `name`, or undefined. */
export function cookieFrom(setCookie: string | string[] | undefined, name: string): string | undefined {
  const lines = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie];
  return lines.find((l) => l.startsWith(`${name}=`))?.split(';')[0];
}

export const csrfIn = (html: string): string => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

/** Posts the sign-in form as a browser would (its own CSRF cookie and field first). */
export async function postLogin(
  app: FastifyInstance,
  email: string,
  password: string,
  extra: { headers?: Record<string, string>; cookie?: string } = {},
) {
  const page = await app.inject({ method: 'GET', url: '/dashboard/login', headers: extra.headers ?? {} });
  const loginCookie = cookieFrom(page.headers['set-cookie'], 'parley_login_csrf') ?? '';
  const cookie = [loginCookie, extra.cookie].filter(Boolean).join('; ');
  return app.inject({
    method: 'POST',
    url: '/dashboard/login',
    headers: { ...FORM, ...(extra.headers ?? {}), cookie },
    payload: new URLSearchParams({ _csrf: csrfIn(page.body), email, password }).toString(),
  });
}

export interface SignedIn {
  cookie: string;
  csrf: string;
  get(url: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  post(
    url: string,
    form: Record<string, string | string[]>,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
}

/** Signs in and returns a small browser: the session cookie and the page's CSRF token. */
export async function signInAs(app: FastifyInstance, email: string, password = PASSWORD): Promise<SignedIn> {
  const res = await postLogin(app, email, password);
  const cookie = cookieFrom(res.headers['set-cookie'], 'parley_session');
  if (res.statusCode !== 303 || !cookie) throw new Error(`sign-in failed: ${res.statusCode} ${res.body}`);
  const page = await app.inject({ method: 'GET', url: '/dashboard/settings', headers: { cookie } });
  const csrf = csrfIn(page.body);
  return {
    cookie,
    csrf,
    get: (url, headers = {}) => app.inject({ method: 'GET', url, headers: { cookie, ...headers } }),
    post: (url, form, headers = {}) => {
      const body = new URLSearchParams();
      for (const [k, v] of Object.entries(form)) for (const item of Array.isArray(v) ? v : [v]) body.append(k, item);
      return app.inject({ method: 'POST', url, headers: { ...FORM, cookie, ...headers }, payload: body.toString() });
    },
  };
}
