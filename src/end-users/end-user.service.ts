import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  type ChannelIdentifiers,
  type ConsentMap,
  type EndUser,
  isOrigin,
  ORIGINS,
  type Origin,
} from './end-user.model.js';
import {
  deleteEndUserRow,
  findByPhone,
  findEndUser,
  findEndUserById,
  findHolders,
  findOrgCountry,
  insertEndUser,
  insertEndUserSkippingConflict,
  insertEndUsersSkippingConflicts,
  insertTags,
  isUniqueViolation,
  type ListFilter,
  listEndUserRows,
  replaceTags,
  setChannelIdentifiersIf,
  toEndUser,
  touchInbound,
  updateEndUserRow,
} from './end-user.repository.js';
import type {
  BatchItemFailed,
  BatchItemResult,
  EndUserBatchItem,
  EndUserCreateBody,
  EndUserListQuery,
  EndUserPatchBody,
} from './end-user.schemas.js';
import { validateBatchItem } from './end-user.schemas.js';
import type { EndUserTable } from './end-user.table.js';
import { normalizeEmail, normalizePhone } from './normalize.js';

const invalid = (field: string, message: string) => new AppError('INVALID_BODY', message, { details: { field } });

function cleanName(value: string, field = 'name'): string {
  const name = value.trim();
  if (!name) throw invalid(field, `Invalid body: '${field}' must not be blank.`);
  return name;
}

function cleanEmail(value: string, field = 'email'): string {
  const email = normalizeEmail(value);
  if (!email) throw invalid(field, `Invalid body: '${field}' is not a valid email address.`);
  return email;
}

function cleanPhone(value: string, country: string | null, field = 'phone'): string {
  const phone = normalizePhone(value, country);
  if (!phone) {
    const hint = value.trim().startsWith('+') || country ? '' : ' (write it in international format, +<country code>)';
    throw invalid(field, `Invalid body: '${field}' is not a valid phone number${hint}.`);
  }
  return phone;
}

function cleanTags(values: readonly string[]): string[] {
  const out: string[] = [];
  for (const [i, value] of values.entries()) {
    const tag = value.trim();
    if (!tag) throw invalid(`tags.${i}`, `Invalid body: 'tags.${i}' must not be blank.`);
    if (!out.includes(tag)) out.push(tag);
  }
  return out;
}

type ConsentInput = { status: 'granted' | 'denied' | 'unknown'; updatedAt?: number; source?: string };
const toConsentState = (input: ConsentInput, now: number) => ({
  status: input.status,
  updatedAt: input.updatedAt ?? now,
  source: input.source?.trim() || 'api',
});

/** The normalized columns of one create or batch item; throws INVALID_BODY naming the field. */
function prepareRow(
  orgId: string,
  origin: Origin,
  item: EndUserBatchItem,
  country: string | null,
  now: number,
): { row: EndUserTable; tags: string[] } {
  const name = item.name === undefined ? null : cleanName(item.name);
  const email = item.email === undefined ? null : cleanEmail(item.email);
  const phone = item.phone === undefined ? null : cleanPhone(item.phone, country);
  if (name === null && email === null && phone === null) {
    throw new AppError('INVALID_BODY', 'Invalid body: give at least one of name, email, phone.');
  }
  const tags = cleanTags(item.tags ?? []);
  const channelIdentifiers: ChannelIdentifiers = {};
  if (item.channelIdentifiers?.msgapp !== undefined) {
    channelIdentifiers.msgapp = cleanPhone(item.channelIdentifiers.msgapp, country, 'channelIdentifiers.msgapp');
  }
  const consent: ConsentMap = {};
  if (item.consent?.msgapp) consent.msgapp = toConsentState(item.consent.msgapp, now);
  return {
    tags,
    row: {
      id: newId('eu'),
      org_id: orgId,
      name,
      email,
      phone,
      tags: JSON.stringify(tags),
      origin,
      channel_identifiers: JSON.stringify(channelIdentifiers),
      consent: JSON.stringify(consent),
      created_at: now,
      last_seen_at: null,
      updated_at: now,
    },
  };
}

/** Which field of `row` an existing record already holds, and that record's ID. */
async function findCollision(
  db: Kysely<DB>,
  orgId: string,
  row: { id: string; email: string | null; phone: string | null },
): Promise<{ field: 'email' | 'phone'; existingId: string } | undefined> {
  const holders = await findHolders(db, orgId, row.email ? [row.email] : [], row.phone ? [row.phone] : []);
  const others = holders.filter((h) => h.id !== row.id);
  const byEmail = others.find((h) => row.email !== null && h.email === row.email);
  if (byEmail) return { field: 'email', existingId: byEmail.id };
  const byPhone = others.find((h) => row.phone !== null && h.phone === row.phone);
  if (byPhone) return { field: 'phone', existingId: byPhone.id };
  return undefined;
}

const duplicateMessage = (field: string) => `An end user with this ${field} already exists.`;

export async function createEndUser(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  input: EndUserCreateBody,
): Promise<EndUser> {
  const country = await findOrgCountry(db, orgId);
  const { origin, ...item } = input;
  const { row, tags } = prepareRow(orgId, origin, item, country, clock.now());
  try {
    if (tags.length === 0) {
      await insertEndUser(db, row);
    } else {
      await db.transaction().execute(async (trx) => {
        await insertEndUser(trx, row);
        await insertTags(
          trx,
          tags.map((tag) => ({ end_user_id: row.id, org_id: orgId, tag })),
        );
      });
    }
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const collision = await findCollision(db, orgId, row);
    if (!collision) throw new AppError('CREATE_FAILED', 'The end user could not be created; retry.');
    throw new AppError('DUPLICATE_ENDUSER', duplicateMessage(collision.field), { details: collision });
  }
  return toEndUser(row);
}

export interface BatchResult {
  created: number;
  failed: number;
  results: BatchItemResult[];
}

/**
 * Creates up to 1,000 records. Items are validated and normalized in memory, inserted in a few
 * multi-row statements that skip unique conflicts, and only the skipped ones are looked up to say
 * which existing record they collide with. Each item is all-or-nothing.
 */
export async function createEndUsers(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  input: { origin: Origin; endUsers: readonly unknown[] },
): Promise<BatchResult> {
  const country = await findOrgCountry(db, orgId);
  const now = clock.now();
  const results: (BatchItemResult | undefined)[] = new Array(input.endUsers.length);
  const pending: { index: number; row: EndUserTable; tags: string[] }[] = [];
  const seenEmail = new Map<string, number>();
  const seenPhone = new Map<string, number>();

  for (const [index, raw] of input.endUsers.entries()) {
    const checked = validateBatchItem(raw);
    if (!checked.ok) {
      results[index] = failed(index, 'INVALID_BODY', checked.message, checked.field);
      continue;
    }
    let prepared: { row: EndUserTable; tags: string[] };
    try {
      prepared = prepareRow(orgId, input.origin, checked.item, country, now);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const field = typeof err.details?.field === 'string' ? err.details.field : undefined;
      results[index] = failed(index, err.code, err.message.replace(/^Invalid body/, 'Invalid item'), field);
      continue;
    }
    const { email, phone } = prepared.row;
    const emailDup = email !== null ? seenEmail.get(email) : undefined;
    const phoneDup = phone !== null ? seenPhone.get(phone) : undefined;
    if (emailDup !== undefined || phoneDup !== undefined) {
      const field = emailDup !== undefined ? 'email' : 'phone';
      const first = emailDup ?? phoneDup ?? 0;
      results[index] = {
        ...failed(index, 'DUPLICATE_ENDUSER', `Item ${first} of this batch has the same ${field}.`, field),
        duplicateOf: first,
      };
      continue;
    }
    if (email !== null) seenEmail.set(email, index);
    if (phone !== null) seenPhone.set(phone, index);
    pending.push({ index, ...prepared });
  }

  const inserted =
    pending.length === 0
      ? new Set<string>()
      : await db.transaction().execute(async (trx) => {
          const ids = await insertEndUsersSkippingConflicts(
            trx,
            pending.map((p) => p.row),
          );
          const tagRows = pending
            .filter((p) => ids.has(p.row.id))
            .flatMap((p) => p.tags.map((tag) => ({ end_user_id: p.row.id, org_id: orgId, tag })));
          if (tagRows.length > 0) await insertTags(trx, tagRows);
          return ids;
        });

  const rejected = pending.filter((p) => !inserted.has(p.row.id));
  const holders =
    rejected.length === 0
      ? []
      : await findHolders(
          db,
          orgId,
          rejected.flatMap((p) => (p.row.email ? [p.row.email] : [])),
          rejected.flatMap((p) => (p.row.phone ? [p.row.phone] : [])),
        );
  const byEmail = new Map(holders.flatMap((h) => (h.email ? [[h.email, h.id] as const] : [])));
  const byPhone = new Map(holders.flatMap((h) => (h.phone ? [[h.phone, h.id] as const] : [])));

  let created = 0;
  for (const p of pending) {
    if (inserted.has(p.row.id)) {
      created++;
      results[p.index] = { index: p.index, status: 'created', endUser: toEndUser(p.row) };
      continue;
    }
    const emailHolder = p.row.email ? byEmail.get(p.row.email) : undefined;
    const phoneHolder = p.row.phone ? byPhone.get(p.row.phone) : undefined;
    if (emailHolder ?? phoneHolder) {
      const field = emailHolder ? 'email' : 'phone';
      results[p.index] = {
        ...failed(p.index, 'DUPLICATE_ENDUSER', duplicateMessage(field), field),
        existingId: emailHolder ?? phoneHolder ?? '',
      };
    } else {
      results[p.index] = failed(p.index, 'CREATE_FAILED', 'The end user could not be created; retry.');
    }
  }
  const ordered = results.map((r, index) => r ?? failed(index, 'CREATE_FAILED', 'The end user was not processed.'));
  return { created, failed: ordered.length - created, results: ordered };
}

function failed(index: number, code: string, error: string, field?: string): BatchItemFailed {
  return { index, status: 'failed', error, code, ...(field ? { field } : {}) };
}

export async function getEndUser(db: Kysely<DB>, orgId: string, id: string): Promise<EndUser> {
  const row = await findEndUserById(db, orgId, id);
  if (!row) throw notFound(id);
  return toEndUser(row);
}

const notFound = (id: string) => new AppError('NOT_FOUND', `No end user with ID "${id}".`);

export const READ_ONLY_FIELDS = ['_id', 'origin', 'createdAt', 'updatedAt', 'lastSeenAt'] as const;

export async function updateEndUser(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  id: string,
  patch: EndUserPatchBody,
): Promise<EndUser> {
  for (const field of READ_ONLY_FIELDS) {
    if (Object.hasOwn(patch, field)) throw invalid(field, `Invalid body: '${field}' is read-only.`);
  }
  const country = await findOrgCountry(db, orgId);
  const now = clock.now();
  let changedFields: { email?: string | null; phone?: string | null } = {};
  try {
    return await db.transaction().execute(async (trx) => {
      const row = await findEndUser(trx, orgId, id, true);
      if (!row) throw notFound(id);
      const current = toEndUser(row);
      const set: Partial<EndUserTable> = { updated_at: now };
      if (patch.name !== undefined) set.name = patch.name === null ? null : cleanName(patch.name);
      if (patch.email !== undefined) set.email = patch.email === null ? null : cleanEmail(patch.email);
      if (patch.phone !== undefined) set.phone = patch.phone === null ? null : cleanPhone(patch.phone, country);
      changedFields = { ...(set.email ? { email: set.email } : {}), ...(set.phone ? { phone: set.phone } : {}) };
      const name = set.name !== undefined ? set.name : row.name;
      const email = set.email !== undefined ? set.email : row.email;
      const phone = set.phone !== undefined ? set.phone : row.phone;
      if (name === null && email === null && phone === null) {
        throw new AppError('INVALID_BODY', 'Invalid body: a record keeps at least one of name, email, phone.');
      }
      let tags: string[] | undefined;
      if (patch.tags !== undefined) {
        tags = patch.tags === null ? [] : cleanTags(patch.tags);
        set.tags = JSON.stringify(tags);
      }
      if (patch.channelIdentifiers !== undefined) {
        const next: ChannelIdentifiers = patch.channelIdentifiers === null ? {} : { ...current.channelIdentifiers };
        const msgapp = patch.channelIdentifiers?.msgapp;
        if (msgapp === null) delete next.msgapp;
        else if (msgapp !== undefined) next.msgapp = cleanPhone(msgapp, country, 'channelIdentifiers.msgapp');
        set.channel_identifiers = JSON.stringify(next);
      }
      if (patch.consent !== undefined) {
        const next: ConsentMap = patch.consent === null ? {} : { ...current.consent };
        const msgapp = patch.consent?.msgapp;
        if (msgapp === null) delete next.msgapp;
        else if (msgapp !== undefined) next.msgapp = toConsentState(msgapp, now);
        set.consent = JSON.stringify(next);
      }
      await updateEndUserRow(trx, orgId, id, set);
      if (tags !== undefined) await replaceTags(trx, orgId, id, tags);
      return toEndUser({ ...row, ...set });
    });
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const collision = await findCollision(db, orgId, {
      id,
      email: changedFields.email ?? null,
      phone: changedFields.phone ?? null,
    });
    throw new AppError(
      'UPDATE_FAILED',
      collision ? `Update failed: ${duplicateMessage(collision.field).replace(/^An/, 'an')}` : 'Update failed; retry.',
      collision ? { details: collision } : {},
    );
  }
}

export async function deleteEndUser(db: Kysely<DB>, orgId: string, id: string): Promise<{ _id: string }> {
  const deleted = await deleteEndUserRow(db, orgId, id);
  if (!deleted) throw notFound(id);
  return { _id: id };
}

interface Cursor {
  createdAt: number;
  id: string;
}

export const encodeCursor = (c: Cursor): string =>
  Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url');

function decodeCursor(text: string): Cursor {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      Number.isSafeInteger(value[0]) &&
      typeof value[1] === 'string' &&
      value[1].length <= 64
    ) {
      return { createdAt: value[0] as number, id: value[1] };
    }
  } catch {
    // fall through
  }
  throw invalid('cursor', "Invalid query parameter: 'cursor' is not a cursor this API returned.");
}

export async function listEndUsers(
  db: Kysely<DB>,
  orgId: string,
  query: EndUserListQuery,
): Promise<{ data: EndUser[]; nextCursor: string | null }> {
  if (query.origin !== undefined && !isOrigin(query.origin)) {
    throw new AppError('INVALID_ORIGIN', `origin must be one of ${ORIGINS.join(', ')}.`, {
      details: { field: 'origin' },
    });
  }
  const limit = query.limit ?? 50;
  const filter: ListFilter = {};
  if (query.origin !== undefined) filter.origin = query.origin;
  if (query.tag !== undefined) filter.tag = query.tag.trim();
  if (query.updatedSince !== undefined) filter.updatedSince = query.updatedSince;
  if (query.cursor !== undefined) filter.after = decodeCursor(query.cursor);
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
    if (query.q !== undefined) {
      const q = query.q.trim().toLowerCase();
      if (!q) throw invalid('q', "Invalid query parameter: 'q' must not be blank.");
      filter.prefix = q;
      const digits = q.replace(/[\s().-]/g, '');
      if (/^\+?\d+$/.test(digits)) filter.phonePrefix = digits.startsWith('+') ? digits : `+${digits}`;
    }
  }
  const rows = await listEndUserRows(db, orgId, filter, limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map(toEndUser),
    nextCursor: rows.length > limit && last ? encodeCursor({ createdAt: Number(last.created_at), id: last.id }) : null,
  };
}

/**
 * Called when an inbound message arrives: finds the organization's record for this phone or
 * creates one (origin inbound), fills the name from the profile when the record has none, and
 * moves lastSeenAt forward. Safe under concurrency: insert first, and on the unique conflict update.
 */
export async function recordInboundEndUser(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; phone: string; name?: string; at: number },
): Promise<{ id: string; created: boolean }> {
  const phone = normalizePhone(input.phone);
  if (!phone) throw invalid('phone', `Invalid phone number "${input.phone}".`);
  const name = input.name?.trim() || undefined;
  const now = clock.now();
  for (let attempt = 0; attempt < 5; attempt++) {
    const row: EndUserTable = {
      id: newId('eu'),
      org_id: input.orgId,
      name: name ?? null,
      email: null,
      phone,
      tags: '[]',
      origin: 'inbound',
      channel_identifiers: JSON.stringify({ msgapp: phone }),
      consent: '{}',
      created_at: now,
      last_seen_at: input.at,
      updated_at: now,
    };
    if (await insertEndUserSkippingConflict(db, row)) return { id: row.id, created: true };
    const existing = await findByPhone(db, input.orgId, phone);
    if (!existing) continue; // deleted between the insert and the read: try again
    await touchInbound(db, existing.id, { at: input.at, now, name });
    let current = existing.channel_identifiers;
    for (let i = 0; i < 3; i++) {
      const ids: ChannelIdentifiers = JSON.parse(current) as ChannelIdentifiers;
      if (ids.msgapp) break;
      if (await setChannelIdentifiersIf(db, existing.id, current, JSON.stringify({ ...ids, msgapp: phone }))) break;
      const again = await findEndUser(db, input.orgId, existing.id);
      if (!again) break;
      current = again.channel_identifiers;
    }
    return { id: existing.id, created: false };
  }
  throw new AppError('CREATE_FAILED', 'The end user could not be recorded; retry.');
}
