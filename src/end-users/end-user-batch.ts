import type { Kysely } from 'kysely';
import { isRetryableWrite } from '../db/db-errors.js';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId, randomBase62 } from '../shared/ids.js';
import type { Attributes, Origin } from './end-user.model.js';
import {
  findHolders,
  findOrgCountry,
  insertAttributes,
  insertEndUsersSkippingConflicts,
  insertTags,
  toEndUser,
} from './end-user.repository.js';
import type { BatchItemFailed, BatchItemResult } from './end-user.schemas.js';
import { validateBatchItem } from './end-user.schemas.js';
import type { EndUserTable } from './end-user.table.js';
import { attributeRows, BUSY, duplicateMessage, prepareRow, REFUSED } from './end-user-input.js';
import { isRefusedWrite, withWriteRetry } from './write-retry.js';

/** `POST /api/endusers/batch` and the CSV import: creating up to 1,000 records at once. */

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

export interface BatchResult {
  created: number;
  failed: number;
  results: BatchItemResult[];
}

interface Candidate {
  index: number;
  row: EndUserTable;
  tags: string[];
  attributes: Attributes;
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
    const attributes = items
      .filter((p) => ids.has(p.row.id))
      .flatMap((p) => attributeRows(orgId, p.row.id, p.attributes));
    if (attributes.length > 0) await insertAttributes(trx, attributes);
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
