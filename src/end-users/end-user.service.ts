import type { Kysely } from 'kysely';
import { type KeyEpochConfirmer, readConfirmingKey } from '../auth/index.js';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { decodeCursor, encodeCursor } from '../shared/cursor.js';
import { AppError } from '../shared/errors.js';
import { newId, randomBase62 } from '../shared/ids.js';
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
  findEndUserByIdWithKeyEpoch,
  findHolders,
  findOrgCountry,
  insertEndUser,
  insertEndUserSkippingConflict,
  insertEndUsersSkippingConflicts,
  insertTags,
  isRefusedWrite,
  isRetryableWrite,
  isUniqueViolation,
  type ListFilter,
  listEndUserRows,
  replaceTags,
  setChannelIdentifiersIf,
  toEndUser,
  touchInbound,
  updateEndUserRow,
  withWriteRetry,
} from './end-user.repository.js';
import type {
  BatchItemFailed,
  BatchItemResult,
  EndUserBatchItem,
  EndUserCreateBody,
  EndUserListQuery,
  EndUserPatchBody,
} from './end-user.schemas.js';
import { MAX_NAME, MAX_TAG, validateBatchItem } from './end-user.schemas.js';
import type { EndUserTable } from './end-user.table.js';
import { nationalPhonePrefix, normalizeEmail, normalizePhone, searchKey } from './normalize.js';

const invalid = (field: string, message: string) => new AppError('INVALID_BODY', message, { details: { field } });

/** Something a reader would see: not only spaces, zero-width or other invisible characters. */
const VISIBLE = /[^\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cc}]/u;

/** Length in characters (code points), as the schemas count it. */
const lengthOf = (text: string) => (text.length <= 64 ? text.length : Array.from(text).length);

// Also checked here, not only by the HTTP layer: the CSV import reaches the service directly, and
// PostgreSQL cannot store a NUL in text.
function refuseNul(value: string, field: string): void {
  if (value.includes('\u0000')) throw invalid(field, `Invalid body: '${field}' must not contain a NUL character.`);
}

function cleanName(value: string, field = 'name'): string {
  refuseNul(value, field);
  const name = value.trim();
  if (!VISIBLE.test(name)) throw invalid(field, `Invalid body: '${field}' must not be blank.`);
  if (lengthOf(name) > MAX_NAME) {
    throw invalid(field, `Invalid body: '${field}' must be at most ${MAX_NAME} characters.`);
  }
  return name;
}

function cleanEmail(value: string, field = 'email'): string {
  refuseNul(value, field);
  const email = normalizeEmail(value);
  if (!email) throw invalid(field, `Invalid body: '${field}' is not a valid email address.`);
  return email;
}

function cleanPhone(value: string, country: string | null, field = 'phone'): string {
  refuseNul(value, field);
  const phone = normalizePhone(value, country);
  if (!phone) {
    const text = value.trim();
    const hint = /[^\d\s().+/-]/.test(text)
      ? ' (write the number alone: no extension or other text)'
      : text.startsWith('+') || country
        ? ''
        : ' (write it in international format, +<country code>)';
    throw invalid(field, `Invalid body: '${field}' is not a valid phone number${hint}.`);
  }
  return phone;
}

function cleanTags(values: readonly string[]): string[] {
  const out: string[] = [];
  for (const [i, value] of values.entries()) {
    const field = `tags.${i}`;
    refuseNul(value, field);
    const tag = value.trim();
    if (!VISIBLE.test(tag)) throw invalid(field, `Invalid body: '${field}' must not be blank.`);
    if (lengthOf(tag) > MAX_TAG)
      throw invalid(field, `Invalid body: '${field}' must be at most ${MAX_TAG} characters.`);
    if (!out.includes(tag)) out.push(tag);
  }
  return out;
}

type ConsentInput = { status: 'granted' | 'denied' | 'unknown'; updatedAt?: number; source?: string };
function toConsentState(input: ConsentInput, now: number, field: string) {
  if (input.source !== undefined) refuseNul(input.source, `${field}.source`);
  return { status: input.status, updatedAt: input.updatedAt ?? now, source: input.source?.trim() || 'api' };
}

/**
 * IDs for the items of one batch, increasing with the item's position under any collation: one
 * random stem, then the position in decimal digits (eu_ + 22 characters, like newId). All items of
 * a batch share one createdAt, so this is what lists them in order: later items first.
 */
function batchIds(count: number): string[] {
  if (count <= 1) return [newId('eu')];
  const width = String(count - 1).length;
  const stem = randomBase62(22 - width);
  return Array.from({ length: count }, (_, i) => `eu_${stem}${String(i).padStart(width, '0')}`);
}

/** The normalized columns of one create or batch item; throws INVALID_BODY naming the field. */
function prepareRow(
  orgId: string,
  origin: Origin,
  item: EndUserBatchItem,
  country: string | null,
  now: number,
  id: string,
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
  if (item.consent?.msgapp) consent.msgapp = toConsentState(item.consent.msgapp, now, 'consent.msgapp');
  return {
    tags,
    row: {
      id,
      org_id: orgId,
      name,
      name_search: name === null ? null : searchKey(name),
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
const REFUSED = 'The end user could not be created: the database refused the record.';
const BUSY = 'The end user could not be created: the database was too busy; retry.';

export async function createEndUser(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  input: EndUserCreateBody,
): Promise<EndUser> {
  const country = await findOrgCountry(db, orgId);
  const { origin, ...item } = input;
  const { row, tags } = prepareRow(orgId, origin, item, country, clock.now(), newId('eu'));
  try {
    await withWriteRetry(async () => {
      if (tags.length === 0) return insertEndUser(db, row);
      await db.transaction().execute(async (trx) => {
        await insertEndUser(trx, row);
        await insertTags(
          trx,
          tags.map((tag) => ({ end_user_id: row.id, org_id: orgId, tag })),
        );
      });
    });
  } catch (err) {
    if (isRefusedWrite(err)) throw new AppError('CREATE_FAILED', REFUSED);
    if (isRetryableWrite(err)) throw new AppError('CREATE_FAILED', BUSY);
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

interface Candidate {
  index: number;
  row: EndUserTable;
  tags: string[];
}

/** One global order for the unique keys a batch takes (email, then phone), so batches cannot deadlock on them. */
function byIdentity(a: Candidate, b: Candidate): number {
  const ae = a.row.email ?? '\uffff';
  const be = b.row.email ?? '\uffff';
  if (ae !== be) return ae < be ? -1 : 1;
  const ap = a.row.phone ?? '\uffff';
  const bp = b.row.phone ?? '\uffff';
  if (ap !== bp) return ap < bp ? -1 : 1;
  return a.index - b.index;
}

/** Inserts the items (rows and tags) in one transaction; returns the IDs that went in. */
async function insertItems(db: Kysely<DB>, orgId: string, items: readonly Candidate[]): Promise<Set<string>> {
  return db.transaction().execute(async (trx) => {
    const ids = await insertEndUsersSkippingConflicts(
      trx,
      items.map((p) => p.row),
    );
    const tagRows = items
      .filter((p) => ids.has(p.row.id))
      .flatMap((p) => p.tags.map((tag) => ({ end_user_id: p.row.id, org_id: orgId, tag })));
    if (tagRows.length > 0) await insertTags(trx, tagRows);
    return ids;
  });
}

/**
 * Inserts items skipping unique conflicts, in the global order, retrying deadlock victims. If the
 * database refuses a row outright (one bad row fails the whole statement), goes again one item at a
 * time so that only the refused items fail.
 */
async function insertClaimers(
  db: Kysely<DB>,
  orgId: string,
  items: readonly Candidate[],
): Promise<{ inserted: Set<string>; refused: Set<string>; busy: Set<string> }> {
  const refused = new Set<string>();
  const busy = new Set<string>();
  if (items.length === 0) return { inserted: new Set(), refused, busy };
  const ordered = [...items].sort(byIdentity);
  try {
    return { inserted: await withWriteRetry(() => insertItems(db, orgId, ordered)), refused, busy };
  } catch (err) {
    if (!isRefusedWrite(err) && !isRetryableWrite(err)) throw err;
  }
  const inserted = new Set<string>();
  for (const item of ordered) {
    try {
      for (const id of await withWriteRetry(() => insertItems(db, orgId, [item]))) inserted.add(id);
    } catch (err) {
      if (isRefusedWrite(err)) refused.add(item.row.id);
      else if (isRetryableWrite(err)) busy.add(item.row.id);
      else throw err;
    }
  }
  return { inserted, refused, busy };
}

/**
 * Creates up to 1,000 records. Items are validated and normalized in memory; then, in rounds: the
 * items still open that share no email or phone with an earlier open item are inserted, in a few
 * multi-row statements that skip unique conflicts, and only the skipped ones are looked up to say
 * which stored record they collide with. An item that shares a value with an earlier one waits: it
 * is a duplicate of that item if that item was created, and is tried again on its own merits in the
 * next round if it was not. So the first item that is actually created with a value wins it. Usually
 * there is one round (more only after a failure, or for chains of items sharing values); each item
 * is all-or-nothing.
 */
export async function createEndUsers(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  input: { origin: Origin; endUsers: readonly unknown[] },
): Promise<BatchResult> {
  const country = await findOrgCountry(db, orgId);
  const now = clock.now();
  const ids = batchIds(input.endUsers.length);
  const results: (BatchItemResult | undefined)[] = new Array(input.endUsers.length);
  let round: Candidate[] = [];

  for (const [index, raw] of input.endUsers.entries()) {
    const checked = validateBatchItem(raw);
    if (!checked.ok) {
      results[index] = failed(index, 'INVALID_BODY', checked.message, checked.field);
      continue;
    }
    try {
      round.push({ index, ...prepareRow(orgId, input.origin, checked.item, country, now, ids[index] ?? newId('eu')) });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const field = typeof err.details?.field === 'string' ? err.details.field : undefined;
      results[index] = failed(index, err.code, err.message.replace(/^Invalid body/, 'Invalid item'), field);
    }
  }

  // Stored records known to hold a value, learned from the lookups after a round.
  const heldEmail = new Map<string, string>();
  const heldPhone = new Map<string, string>();
  const storedHolder = ({ row }: Candidate): { field: 'email' | 'phone'; existingId: string } | undefined => {
    const byEmail = row.email !== null ? heldEmail.get(row.email) : undefined;
    if (byEmail !== undefined) return { field: 'email', existingId: byEmail };
    const byPhone = row.phone !== null ? heldPhone.get(row.phone) : undefined;
    if (byPhone !== undefined) return { field: 'phone', existingId: byPhone };
    return undefined;
  };
  // Items that lost a conflict to a record that was gone when looked up (deleted meanwhile) go
  // again; this bounds how often, under a storm of concurrent deletes.
  let rematches = 3;
  let created = 0;

  while (round.length > 0) {
    const claimedEmail = new Map<string, number>();
    const claimedPhone = new Map<string, number>();
    const claimers: Candidate[] = [];
    const waiting: { item: Candidate; email: number | undefined; phone: number | undefined }[] = [];
    for (const item of round) {
      const holder = storedHolder(item);
      if (holder) {
        results[item.index] = duplicateOfStored(item.index, holder);
        continue;
      }
      const { email, phone } = item.row;
      const emailFirst = email !== null ? claimedEmail.get(email) : undefined;
      const phoneFirst = phone !== null ? claimedPhone.get(phone) : undefined;
      // Every open item reserves its values, even one that waits: a later item must not take a
      // value that an earlier one may still win, should the item it waits on fail.
      if (email !== null && emailFirst === undefined) claimedEmail.set(email, item.index);
      if (phone !== null && phoneFirst === undefined) claimedPhone.set(phone, item.index);
      if (emailFirst !== undefined || phoneFirst !== undefined) {
        waiting.push({ item, email: emailFirst, phone: phoneFirst });
        continue;
      }
      claimers.push(item);
    }

    const outcome = await insertClaimers(db, orgId, claimers);
    const lost: Candidate[] = [];
    for (const item of claimers) {
      const id = item.row.id;
      if (outcome.inserted.has(id)) {
        created++;
        results[item.index] = { index: item.index, status: 'created', endUser: toEndUser(item.row) };
      } else if (outcome.refused.has(id)) {
        results[item.index] = failed(item.index, 'CREATE_FAILED', REFUSED);
      } else if (outcome.busy.has(id)) {
        results[item.index] = failed(item.index, 'CREATE_FAILED', BUSY);
      } else {
        lost.push(item);
      }
    }

    const next: Candidate[] = [];
    for (const w of waiting) {
      const ifCreated = (index: number | undefined) =>
        index !== undefined && results[index]?.status === 'created' ? index : undefined;
      const byEmail = ifCreated(w.email);
      const byPhone = ifCreated(w.phone);
      if (byEmail === undefined && byPhone === undefined) {
        next.push(w.item);
        continue;
      }
      const [field, first] = byEmail !== undefined ? (['email', byEmail] as const) : (['phone', byPhone ?? 0] as const);
      results[w.item.index] = {
        ...failed(w.item.index, 'DUPLICATE_ENDUSER', `Item ${first} of this batch has the same ${field}.`, field),
        duplicateOf: first,
      };
    }

    if (lost.length > 0) {
      // One lookup for the losers and for every item going on, so the next round knows them too.
      const open = [...lost, ...next];
      const holders = await findHolders(
        db,
        orgId,
        open.flatMap((p) => (p.row.email !== null && !heldEmail.has(p.row.email) ? [p.row.email] : [])),
        open.flatMap((p) => (p.row.phone !== null && !heldPhone.has(p.row.phone) ? [p.row.phone] : [])),
      );
      for (const h of holders) {
        if (h.email !== null) heldEmail.set(h.email, h.id);
        if (h.phone !== null) heldPhone.set(h.phone, h.id);
      }
      let rematched = false;
      for (const item of lost) {
        const holder = storedHolder(item);
        if (holder) {
          results[item.index] = duplicateOfStored(item.index, holder);
        } else if (rematches > 0) {
          rematched = true;
          next.push(item);
        } else {
          results[item.index] = failed(item.index, 'CREATE_FAILED', BUSY);
        }
      }
      if (rematched) rematches--;
    }
    round = next.sort((a, b) => a.index - b.index);
  }

  const ordered = results.map((r, index) => r ?? failed(index, 'CREATE_FAILED', 'The end user was not processed.'));
  return { created, failed: ordered.length - created, results: ordered };
}

function duplicateOfStored(index: number, holder: { field: 'email' | 'phone'; existingId: string }): BatchItemFailed {
  return {
    ...failed(index, 'DUPLICATE_ENDUSER', duplicateMessage(holder.field), holder.field),
    existingId: holder.existingId,
  };
}

function failed(index: number, code: string, error: string, field?: string): BatchItemFailed {
  return { index, status: 'failed', error, code, ...(field ? { field } : {}) };
}

/** The characters of every record ID (eu_ and base62); an ID outside them, or longer, names no record. */
const ID_SHAPE = /^[0-9A-Za-z_]{1,64}$/;

export async function getEndUser(
  db: Kysely<DB>,
  orgId: string,
  id: string,
  /** Given when the key still awaits the epoch this read returns (src/auth/key-epoch.ts). */
  confirmKey?: KeyEpochConfirmer,
): Promise<EndUser> {
  const shaped = ID_SHAPE.test(id);
  // The key is confirmed before anything is answered, a 404 included.
  const row = await readConfirmingKey(
    confirmKey,
    () => (shaped ? findEndUserById(db, orgId, id) : Promise.resolve(undefined)),
    () => findEndUserByIdWithKeyEpoch(db, { orgId, id: shaped ? id : '' }),
  );
  if (!row) throw notFound(id);
  return toEndUser(row);
}

const notFound = (id: string) =>
  new AppError('NOT_FOUND', ID_SHAPE.test(id) ? `No end user with ID "${id}".` : 'No end user with this ID.');

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
  if (!ID_SHAPE.test(id)) throw notFound(id);
  const country = await findOrgCountry(db, orgId);
  const now = clock.now();
  let changedFields: { email?: string | null; phone?: string | null } = {};
  try {
    return await withWriteRetry(() =>
      db.transaction().execute(async (trx) => {
        const row = await findEndUser(trx, orgId, id, true);
        if (!row) throw notFound(id);
        const current = toEndUser(row);
        const set: Partial<EndUserTable> = { updated_at: now };
        if (patch.name !== undefined) {
          set.name = patch.name === null ? null : cleanName(patch.name);
          set.name_search = set.name === null ? null : searchKey(set.name);
        }
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
          else if (msgapp !== undefined) next.msgapp = toConsentState(msgapp, now, 'consent.msgapp');
          set.consent = JSON.stringify(next);
        }
        await updateEndUserRow(trx, orgId, id, set);
        if (tags !== undefined) await replaceTags(trx, orgId, id, tags);
        return toEndUser({ ...row, ...set });
      }),
    );
  } catch (err) {
    if (isRefusedWrite(err)) throw new AppError('UPDATE_FAILED', 'Update failed: the database refused the change.');
    if (isRetryableWrite(err)) throw new AppError('UPDATE_FAILED', 'Update failed: the database was too busy; retry.');
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
  if (!ID_SHAPE.test(id)) throw notFound(id);
  let deleted: boolean;
  try {
    deleted = await withWriteRetry(() => deleteEndUserRow(db, orgId, id));
  } catch (err) {
    if (isRefusedWrite(err)) throw new AppError('DELETE_FAILED', 'Delete failed: the database refused it.');
    if (isRetryableWrite(err)) throw new AppError('DELETE_FAILED', 'Delete failed: the database was too busy; retry.');
    throw err;
  }
  if (!deleted) throw notFound(id);
  return { _id: id };
}

const CURSOR_ID = /^eu_[0-9A-Za-z]{22}$/;

function decodeListCursor(text: string): { createdAt: number; id: string } {
  const position = decodeCursor(text, CURSOR_ID);
  if (!position) throw invalid('cursor', "Invalid query parameter: 'cursor' is not a cursor this API returned.");
  return { createdAt: position.at, id: position.id };
}

export async function listEndUsers(
  db: Kysely<DB>,
  orgId: string,
  query: EndUserListQuery,
): Promise<{ data: EndUser[]; nextCursor: string | null }> {
  if (query.origin !== undefined && !isOrigin(query.origin)) throw invalidOrigin();
  const limit = query.limit ?? 50;
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
  if (query.cursor !== undefined) filter.after = decodeListCursor(query.cursor);
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
  const rows = await listEndUserRows(db, orgId, filter, limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map(toEndUser),
    nextCursor: rows.length > limit && last ? encodeCursor(Number(last.created_at), last.id) : null,
  };
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

/** A profile name as the provider gives it: NULs dropped, trimmed, cut to the limit; none if invisible. */
function inboundName(raw: string | undefined): { name: string; search: string } | undefined {
  if (raw === undefined) return undefined;
  const name = Array.from(raw.replaceAll('\u0000', '').trim()).slice(0, MAX_NAME).join('').trim();
  return VISIBLE.test(name) ? { name, search: searchKey(name) } : undefined;
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
  const name = inboundName(input.name);
  const now = clock.now();
  for (let attempt = 0; attempt < 5; attempt++) {
    const row: EndUserTable = {
      id: newId('eu'),
      org_id: input.orgId,
      name: name?.name ?? null,
      name_search: name?.search ?? null,
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
