import type { IncomingMessage, ServerResponse } from 'node:http';
import { SandboxTemplates, TEMPLATE_STATUSES } from './sandbox-templates.js';
import { digits, isObject, type Json, wireError } from './sandbox-wire.js';

/**
 * The sandbox's business-account endpoints, as the provider's: the account's templates
 * (`GET`/`POST /{version}/{waba}/message_templates`, any account ID: the sandbox plays one account)
 * and a number's health (`GET /{version}/{phone_number_id}?fields=quality_rating,...`); and the
 * sandbox's own controls that change them and deliver the provider's webhooks
 * (`POST /sandbox/templates/status`, `POST /sandbox/quality`).
 */
export const SANDBOX_WABA = 'sandbox-waba';

export const QUALITY_RATINGS = ['GREEN', 'YELLOW', 'RED'] as const;
const RANK: Record<string, number> = { RED: 0, YELLOW: 1, GREEN: 2 };

export interface NumberHealth {
  rating: string;
  limit: string;
}

export interface AccountEndpoints {
  readonly templates: SandboxTemplates;
  readonly health: Map<string, NumberHealth>;
  /** The display number the sandbox saw for a phone number ID (for the quality webhook). */
  readonly displayNumber: (phoneNumberId: string) => string | undefined;
  /** Delivers a signed account-level webhook (`entry[].id` the account), with retries; resolves with Parley's status. */
  readonly deliver: (change: { field: string; value: Json }) => Promise<number>;
  readonly readJson: (req: IncomingMessage) => Promise<unknown>;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const bearer = (req: IncomingMessage) => /^Bearer \S+$/.test(req.headers.authorization ?? '');

export const healthOf = (health: Map<string, NumberHealth>, phoneNumberId: string): NumberHealth =>
  health.get(phoneNumberId) ?? { rating: 'GREEN', limit: 'TIER_1K' };

const count = (v: unknown) => (typeof v === 'string' ? new Set(v.match(/\{\{\s*\w+\s*\}\}/g) ?? []).size : 0);

/** Answers the request when it is one of these endpoints; false otherwise. */
export async function handleAccountRequest(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  endpoints: AccountEndpoints,
): Promise<boolean> {
  const list = /^\/v\d+\.\d+\/([\w-]+)\/message_templates$/.exec(path);
  const number = /^\/v\d+\.\d+\/(\d+)$/.exec(path);
  const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
  const wantsHealth =
    number && req.method === 'GET' && /quality_rating|messaging_limit/.test(query.get('fields') ?? '');
  if (list || wantsHealth) {
    if (!bearer(req)) {
      json(res, 401, wireError({ status: 401, code: 190, message: 'Invalid OAuth access token' }));
      return true;
    }
  }
  if (list && req.method === 'GET') {
    json(res, 200, { data: endpoints.templates.entries.map(SandboxTemplates.wire), paging: { cursors: {} } });
    return true;
  }
  if (list && req.method === 'POST') {
    const body = await endpoints.readJson(req);
    if (!isObject(body)) {
      json(res, 400, wireError({ status: 400, code: 100, message: 'Invalid parameter', details: 'a JSON body' }));
      return true;
    }
    const components = Array.isArray(body.components) ? body.components.filter(isObject) : [];
    const header = components.find((c) => String(c.type).toUpperCase() === 'HEADER');
    const format = header ? String(header.format ?? 'TEXT').toUpperCase() : null;
    const made = endpoints.templates.create({
      name: String(body.name ?? ''),
      language: String(body.language ?? ''),
      category: String(body.category ?? '').toUpperCase(),
      body: count(components.find((c) => String(c.type).toUpperCase() === 'BODY')?.text),
      header: format === 'TEXT' ? count(header?.text) : format ? 1 : 0,
      headerFormat: format,
    });
    if (typeof made === 'string') {
      json(res, 400, wireError({ status: 400, code: 100, message: 'Invalid parameter', details: made }));
      return true;
    }
    json(res, 200, { id: made.id, status: made.status, category: made.category });
    return true;
  }
  if (wantsHealth && number) {
    const h = healthOf(endpoints.health, number[1] ?? '');
    json(res, 200, { quality_rating: h.rating, messaging_limit_tier: h.limit, id: number[1] });
    return true;
  }
  if (req.method === 'POST' && path === '/sandbox/templates/status') {
    await setTemplateStatus(req, res, endpoints);
    return true;
  }
  if (req.method === 'POST' && path === '/sandbox/quality') {
    await setQuality(req, res, endpoints);
    return true;
  }
  return false;
}

async function setTemplateStatus(req: IncomingMessage, res: ServerResponse, endpoints: AccountEndpoints) {
  const body = await endpoints.readJson(req);
  const b = isObject(body) ? body : {};
  const status = String(b.status ?? '').toUpperCase();
  if (!(TEMPLATE_STATUSES as readonly string[]).includes(status)) {
    return json(res, 400, { error: `status must be one of ${TEMPLATE_STATUSES.join(', ')}` });
  }
  const entry = endpoints.templates.find(String(b.name ?? ''), String(b.language ?? ''));
  if (!entry) return json(res, 404, { error: `no template ${String(b.name)} (${String(b.language)}) in the sandbox` });
  entry.status = status;
  const delivered = await endpoints.deliver({
    field: 'message_template_status_update',
    value: {
      event: status,
      message_template_id: Number(entry.id),
      message_template_name: entry.name,
      message_template_language: entry.language,
      message_template_category: entry.category,
      reason: status === 'REJECTED' ? 'INCORRECT_CATEGORY' : 'NONE',
    },
  });
  json(res, 200, { name: entry.name, language: entry.language, status, webhook: delivered });
}

async function setQuality(req: IncomingMessage, res: ServerResponse, endpoints: AccountEndpoints) {
  const body = await endpoints.readJson(req);
  const b = isObject(body) ? body : {};
  const phoneNumberId = typeof b.phone_number_id === 'string' ? b.phone_number_id : '';
  const rating = String(b.rating ?? '').toUpperCase();
  if (!/^\d{1,32}$/.test(phoneNumberId)) return json(res, 400, { error: 'phone_number_id must be digits' });
  if (!(QUALITY_RATINGS as readonly string[]).includes(rating)) {
    return json(res, 400, { error: `rating must be one of ${QUALITY_RATINGS.join(', ')}` });
  }
  const before = healthOf(endpoints.health, phoneNumberId);
  const limit = typeof b.limit === 'string' && /^[A-Z0-9_]{1,32}$/.test(b.limit) ? b.limit : before.limit;
  endpoints.health.set(phoneNumberId, { rating, limit });
  const event =
    (RANK[rating] ?? 0) < (RANK[before.rating] ?? 0)
      ? 'FLAGGED'
      : (RANK[rating] ?? 0) > (RANK[before.rating] ?? 0)
        ? 'UNFLAGGED'
        : limit !== before.limit
          ? 'UPGRADE'
          : 'UNFLAGGED';
  const delivered = await endpoints.deliver({
    field: 'phone_number_quality_update',
    value: {
      display_phone_number: digits(
        typeof b.display_phone_number === 'string'
          ? b.display_phone_number
          : (endpoints.displayNumber(phoneNumberId) ?? ''),
      ),
      phone_number_id: phoneNumberId,
      event,
      current_limit: limit,
      ...(limit !== before.limit ? { old_limit: before.limit } : {}),
    },
  });
  json(res, 200, { phone_number_id: phoneNumberId, rating, limit, event, webhook: delivered });
}
