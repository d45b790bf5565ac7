import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { Session } from './session.service.js';

/** What every page file shares: forms, cookies, answers, and the signed-in guard (dashboard.routes.ts). */

export const SESSION_COOKIE = 'parley_session';
export const LOGIN_CSRF_COOKIE = 'parley_login_csrf';
/** Where the dashboard opens, and where a sign-in leads: the organization's home page. */
export const HOME_PATH = '/dashboard';
/** The API Keys panel. */
export const KEYS_PATH = '/dashboard/settings/integrations/api-keys';
/** Not part of the API description. */
export const HIDDEN = { schema: { hide: true } } as const;

export type Form = Record<string, string | string[]>;

export function parseForm(body: string): Form {
  const form: Form = {};
  for (const [name, value] of new URLSearchParams(body)) {
    const prior = form[name];
    if (prior === undefined) form[name] = value;
    else form[name] = Array.isArray(prior) ? [...prior, value] : [prior, value];
  }
  return form;
}

export const field = (form: unknown, name: string): string => {
  const value = (form as Form | undefined)?.[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
};
export const fields = (form: unknown, name: string): string[] => {
  const value = (form as Form | undefined)?.[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
};

/**
 * The request's cookies. One that is not valid percent-encoding (planted from a sibling subdomain,
 * say) is left out, as if absent: it can never lock a person out of the dashboard.
 */
export function cookies(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const value = decodeCookieValue(part.slice(i + 1).trim());
    if (value !== undefined) out[part.slice(0, i).trim()] = value;
  }
  return out;
}

function decodeCookieValue(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

export function setCookie(
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

export const isHtmx = (request: FastifyRequest) => request.headers['hx-request'] === 'true';

export const formatTime = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

export function html(reply: FastifyReply, body: string, status = 200) {
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

/** After a change: a full page load of `to` (htmx follows HX-Redirect; a plain form, the 303). */
export function redirectAfterPost(request: FastifyRequest, reply: FastifyReply, to: string) {
  if (isHtmx(request)) return reply.header('hx-redirect', to).code(204).send();
  return reply.redirect(to, 303);
}

/** What the dashboard's plugin gives each page file: the signed-in guard and the session's rules. */
export interface PageKit {
  /** Route options of every page but sign-in: hidden from the API description, a live session required. */
  readonly signedIn: { schema: { hide: true }; preHandler: preHandlerAsyncHookHandler };
  sessionOf(request: FastifyRequest): Session;
  /** Throws 403 unless the session's person is an owner or an admin. */
  mustManage(session: Session): void;
}
