import type { RouteOptions } from 'fastify';
import { errorResponses, type Family, familyOfUrl } from './errors.js';
import { MAX_BODY_DEPTH } from './json-body.js';

/** Methods whose requests Fastify reads a body for (GET and HEAD bodies are never parsed). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * The error statuses a documented route can answer by its shape alone, whatever its own code does:
 *  - every route: 400 (a NUL in a query value, a request without Host, a query that fails its schema);
 *  - a route with path parameters: 404 (no such record, a NUL in a parameter);
 *  - a route whose method carries a body: 400 (not JSON, another Content-Type, too deep, NUL,
 *    `__proto__`) and 413 (over PARLEY_BODY_LIMIT).
 * A Content-Type other than JSON is answered 400, never 415, so 415 is never listed.
 */
export function impliedStatuses(method: string, url: string): number[] {
  const out = new Set<number>([400]);
  if (url.includes(':')) out.add(404);
  if (BODY_METHODS.has(method)) out.add(413);
  return [...out];
}

type ResponseMap = Record<string | number, unknown>;

/** The codes behind each implied status, each with the sentence a coded response names it with. */
const IMPLIED_CODES: Record<number, [code: string, sentence: string][]> = {
  400: [
    [
      'INVALID_BODY',
      `INVALID_BODY: a query value holding NUL (%00); a body that is not JSON, not application/json, nested deeper than ${MAX_BODY_DEPTH} levels, or holding NUL or '__proto__'.`,
    ],
    ['MALFORMED_REQUEST', 'MALFORMED_REQUEST: an HTTP/1.1 request without a Host header.'],
  ],
  404: [['NOT_FOUND', 'NOT_FOUND: no such record (a path parameter holding NUL included).']],
  413: [['PAYLOAD_TOO_LARGE', 'PAYLOAD_TOO_LARGE: the body is over PARLEY_BODY_LIMIT.']],
};

/** A path parameter that is not valid percent-encoding (the router refuses it before any route runs). */
const INVALID_URL: [code: string, sentence: string] = [
  'INVALID_URL',
  'INVALID_URL: a path parameter that is not valid percent-encoding (such as %ED%A0%80).',
];

/** A coded response's description names each code it can carry: the implied ones are added. */
function withCodesNamed(schema: unknown, status: number, hasParams: boolean): unknown {
  const description = (schema as { description?: unknown }).description;
  const text = typeof description === 'string' ? description : '';
  const implied = [...(IMPLIED_CODES[status] ?? []), ...(status === 400 && hasParams ? [INVALID_URL] : [])];
  const missing = implied.filter(([code]) => !text.includes(code)).map(([, s]) => s);
  if (missing.length === 0) return schema;
  return { ...(schema as object), description: [text, ...missing].filter(Boolean).join(' ') };
}

/**
 * Adds the implied statuses (above) that a route's documented responses lack, in the route's
 * envelope (a coded response also names their codes), so that /api/openapi.json names every
 * answer the server can give. Routes without
 * documented responses, and hidden ones (the dashboard), are left alone. Registered as the app's
 * `onRoute` hook, before any route.
 */
export function addImpliedResponses(route: RouteOptions): void {
  const schema = route.schema as { hide?: boolean; response?: ResponseMap } | undefined;
  if (!schema?.response || schema.hide) return;
  const family: Family = (route.config as { family?: Family } | undefined)?.family ?? familyOfUrl(route.url);
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const response: ResponseMap = { ...schema.response };
  for (const method of methods) {
    for (const status of impliedStatuses(method, route.url)) {
      const own = response[status] ?? response[String(status)];
      const schema = own ?? errorResponses(family, [status])[status];
      delete response[String(status)];
      response[status] = family === 'coded' ? withCodesNamed(schema, status, route.url.includes(':')) : schema;
    }
  }
  schema.response = response;
}
