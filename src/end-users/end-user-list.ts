import type { Kysely } from 'kysely';
import type { Seek } from '../db/keyset.js';
import type { DB } from '../db/schema.js';
import { decodeCursor, encodeCursor } from '../shared/cursor.js';
import { AppError } from '../shared/errors.js';
import { type PageRequest, pageOf, seekOf, type TwoWayPage } from '../shared/page.js';
import { nationalPhonePrefix, normalizePhone } from '../shared/phone.js';
import { ATTRIBUTE_KEY, type EndUser, isOrigin, ORIGINS } from './end-user.model.js';
import { findOrgCountry, type ListFilter, listEndUserRows, toEndUser } from './end-user.repository.js';
import type { EndUserListQuery } from './end-user.schemas.js';
import { MAX_TAG } from './end-user.schemas.js';
import { invalid, lengthOf, VISIBLE } from './end-user-input.js';
import { normalizeEmail, searchKey } from './normalize.js';

/** Listing end users: the filters, the search and the cursor. */

const CURSOR_ID = /^eu_[0-9A-Za-z]{22}$/;

function decodeListCursor(text: string): Seek {
  const position = decodeCursor(text, CURSOR_ID);
  if (!position) throw invalid('cursor', "Invalid query parameter: 'cursor' is not a cursor this API returned.");
  return { ...position, backward: false };
}

export async function listEndUsers(
  db: Kysely<DB>,
  orgId: string,
  query: EndUserListQuery,
): Promise<{ data: EndUser[]; nextCursor: string | null }> {
  const limit = query.limit ?? 50;
  const filter = await filterOf(db, orgId, query);
  if (query.cursor !== undefined) filter.seek = decodeListCursor(query.cursor);
  const rows = await listEndUserRows(db, orgId, filter, limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map(toEndUser),
    nextCursor: rows.length > limit && last ? encodeCursor(Number(last.created_at), last.id) : null,
  };
}

/** The dashboard's list: the API's filters, newest first, a page at a time both ways. */
export async function pageOfEndUsers(
  db: Kysely<DB>,
  orgId: string,
  query: Omit<EndUserListQuery, 'cursor' | 'limit'>,
  request: PageRequest,
): Promise<TwoWayPage<EndUser>> {
  const filter = await filterOf(db, orgId, query);
  const seek = seekOf(request, CURSOR_ID);
  if (seek) filter.seek = seek;
  const rows = await listEndUserRows(db, orgId, filter, request.limit + 1);
  return pageOf(rows, request.limit, seek, (r) => ({ at: Number(r.created_at), id: r.id }), toEndUser);
}

async function filterOf(db: Kysely<DB>, orgId: string, query: EndUserListQuery): Promise<ListFilter> {
  if (query.origin !== undefined && !isOrigin(query.origin)) throw invalidOrigin();
  const filter: ListFilter = {};
  if (query.origin !== undefined) filter.origin = query.origin;
  if (query.tag !== undefined) {
    const tag = query.tag.trim();
    if (!VISIBLE.test(tag)) throw invalid('tag', "Invalid query parameter: 'tag' must not be blank.");
    if (lengthOf(tag) > MAX_TAG) {
      throw invalid('tag', `Invalid query parameter: 'tag' must be at most ${MAX_TAG} characters.`);
    }
    filter.tag = tag;
  }
  if (query.updatedSince !== undefined) filter.updatedSince = query.updatedSince;
  if (query.attribute !== undefined) filter.attributes = query.attribute.map(parseAttributeFilter);
  if (query.email !== undefined) {
    const email = normalizeEmail(query.email);
    if (!email) throw invalid('email', "Invalid query parameter: 'email' is not a valid email address.");
    filter.email = email;
  }
  if (query.phone !== undefined || query.q !== undefined) {
    const country = await findOrgCountry(db, orgId);
    if (query.phone !== undefined) {
      const phone = normalizePhone(query.phone, country);
      if (!phone) throw invalid('phone', "Invalid query parameter: 'phone' is not a valid phone number.");
      filter.phone = phone;
    }
    if (query.q !== undefined) filter.search = searchOf(query.q, country);
  }
  return filter;
}

/** `key:value` (split at the first colon: the value may hold colons); the key follows the attribute rules. */
export function parseAttributeFilter(text: string): { name: string; value: string } {
  const at = text.indexOf(':');
  const name = at === -1 ? text : text.slice(0, at);
  if (at === -1 || !ATTRIBUTE_KEY.test(name)) {
    throw invalid(
      'attribute',
      "Invalid query parameter: 'attribute' must be key:value, the key 1 to 64 characters of A-Z, a-z, 0-9 and _.",
    );
  }
  return { name, value: text.slice(at + 1) };
}

export const invalidOrigin = () =>
  new AppError('INVALID_ORIGIN', `origin must be one of ${ORIGINS.join(', ')}.`, { details: { field: 'origin' } });

/**
 * What `q` matches: the start of the name (its search key: any case, any database), of the email,
 * and of the phone. Digits (with spaces, dots, dashes, parentheses) also match as the start of an
 * E.164 number written without `+` (`1415` → +1415...), and, in an organization with a default
 * country, as the start of a national number of that country (`07400` in GB → +447400...).
 */
function searchOf(raw: string, country: string | null): NonNullable<ListFilter['search']> {
  const q = raw.trim();
  if (!VISIBLE.test(q)) throw invalid('q', "Invalid query parameter: 'q' must not be blank.");
  const phones: string[] = [];
  const digits = q.replace(/[\s().-]/g, '');
  if (/^\+?\d+$/.test(digits)) {
    phones.push(digits.startsWith('+') ? digits : `+${digits}`);
    const national = !digits.startsWith('+') && country ? nationalPhonePrefix(q, country) : undefined;
    if (national && !phones.includes(national)) phones.push(national);
  }
  return { name: searchKey(q), email: q.toLowerCase(), phones };
}
