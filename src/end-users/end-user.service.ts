import type { Kysely } from 'kysely';
import { type KeyEpochConfirmer, readConfirmingKey } from '../auth/index.js';
import { isRetryableWrite, isUniqueViolation } from '../db/db-errors.js';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { findEndUserById, findEndUserByIdWithKeyEpoch } from './end-user.fast.js';
import type { ChannelIdentifiers, ConsentMap, EndUser } from './end-user.model.js';
import {
  deleteEndUserRow,
  findEndUser,
  findHolders,
  findOrgCountry,
  insertAttributes,
  insertEndUser,
  insertTags,
  replaceAttributes,
  replaceTags,
  toEndUser,
  updateEndUserRow,
} from './end-user.repository.js';
import type { EndUserCreateBody, EndUserPatchBody } from './end-user.schemas.js';
import type { EndUserTable } from './end-user.table.js';
import {
  attributeRows,
  BUSY,
  cleanEmail,
  cleanName,
  cleanPhone,
  cleanTags,
  duplicateMessage,
  invalid,
  mergeAttributes,
  prepareRow,
  REFUSED,
  toConsentState,
} from './end-user-input.js';
import { searchKey } from './normalize.js';
import { isRefusedWrite, withWriteRetry } from './write-retry.js';

// The end-user verbs: one record created, read, changed, deleted; listing, batches and the inbound
// hook are in files of their own, and answered from here.
export { type BatchResult, createEndUsers } from './end-user-batch.js';
export { invalidOrigin, listEndUsers, pageOfEndUsers } from './end-user-list.js';
export { recordInboundEndUser } from './inbound-end-user.js';

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

export async function createEndUser(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  input: EndUserCreateBody,
): Promise<EndUser> {
  const country = await findOrgCountry(db, orgId);
  const { origin, ...item } = input;
  const { row, tags, attributes } = prepareRow(orgId, origin, item, country, clock.now(), newId('eu'));
  const attributeList = attributeRows(orgId, row.id, attributes);
  try {
    await withWriteRetry(async () => {
      if (tags.length === 0 && attributeList.length === 0) return insertEndUser(db, row);
      await db.transaction().execute(async (trx) => {
        await insertEndUser(trx, row);
        if (tags.length > 0) {
          await insertTags(
            trx,
            tags.map((tag) => ({ end_user_id: row.id, org_id: orgId, tag })),
          );
        }
        if (attributeList.length > 0) await insertAttributes(trx, attributeList);
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
        let attributes: ReturnType<typeof mergeAttributes> | undefined;
        if (patch.attributes !== undefined) {
          attributes = mergeAttributes(current.attributes, patch.attributes);
          set.attributes = JSON.stringify(attributes);
        }
        await updateEndUserRow(trx, orgId, id, set);
        if (tags !== undefined) await replaceTags(trx, orgId, id, tags);
        if (attributes !== undefined) await replaceAttributes(trx, orgId, id, attributeRows(orgId, id, attributes));
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
