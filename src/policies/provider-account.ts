import { request } from 'undici';

/**
 * The provider's account endpoints Parley reads beside its sends: a business account's templates
 * (`GET /{waba}/message_templates`) and a number's health (`GET /{phone_number_id}?fields=...`).
 * The sandbox serves both in the same wire format.
 */
export interface ProviderAccount {
  /** Every template of the account (all pages); throws when the provider cannot be read. */
  listTemplates(wabaId: string, accessToken: string): Promise<unknown[]>;
  /** The number's quality rating and messaging limit tier; throws when it cannot be read. */
  numberHealth(phoneNumberId: string, accessToken: string): Promise<{ quality: string; messagingLimit: string | null }>;
}

export interface ProviderAccountOptions {
  /** The provider's base address (the sandbox's when none is configured); read on each call. */
  readonly baseUrl: () => string;
  readonly version: string;
  readonly timeoutMs: number;
}

/** At most this many pages of templates are read (250 a page). */
const MAX_PAGES = 40;

export class ProviderAccountError extends Error {}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function createProviderAccount(options: ProviderAccountOptions): ProviderAccount {
  async function getJson(url: string, accessToken: string): Promise<Record<string, unknown>> {
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(url, {
        method: 'GET',
        headers: { authorization: `Bearer ${accessToken}` },
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
    } catch (err) {
      throw new ProviderAccountError(`the provider could not be reached (${(err as Error).message})`);
    }
    const text = await res.body.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (res.statusCode !== 200 || !isObject(body)) {
      const error = isObject(body) && isObject(body.error) ? body.error : undefined;
      const message = typeof error?.message === 'string' ? error.message : `HTTP ${res.statusCode}`;
      throw new ProviderAccountError(`the provider answered ${res.statusCode}: ${message}`);
    }
    return body;
  }
  const base = () => `${options.baseUrl().replace(/\/$/, '')}/${options.version}`;
  return {
    async listTemplates(wabaId, accessToken) {
      const items: unknown[] = [];
      let url: string | undefined =
        `${base()}/${encodeURIComponent(wabaId)}/message_templates?fields=name,status,category,language,components&limit=250`;
      for (let page = 0; url && page < MAX_PAGES; page++) {
        const body = await getJson(url, accessToken);
        if (!Array.isArray(body.data)) throw new ProviderAccountError('the provider answered without a template list');
        items.push(...body.data);
        const next = isObject(body.paging) ? body.paging.next : undefined;
        url = typeof next === 'string' && /^https?:\/\//.test(next) ? next : undefined;
      }
      return items;
    },
    async numberHealth(phoneNumberId, accessToken) {
      const body = await getJson(
        `${base()}/${encodeURIComponent(phoneNumberId)}?fields=quality_rating,messaging_limit_tier`,
        accessToken,
      );
      const quality = typeof body.quality_rating === 'string' ? body.quality_rating.toUpperCase() : 'UNKNOWN';
      const limit = typeof body.messaging_limit_tier === 'string' ? body.messaging_limit_tier : null;
      return { quality, messagingLimit: limit };
    },
  };
}
