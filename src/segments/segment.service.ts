import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { ATTRIBUTE_KEY, type EndUser, toEndUser } from '../end-users/index.js';
import type { Clock } from '../shared/clock.js';
import { decodeCursor, encodeCursor } from '../shared/cursor.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { MAX_SEGMENT_ATTRIBUTES, MAX_SEGMENT_NAME, SEGMENT_ID, type Segment } from './segment.model.js';
import {
  countMembers,
  deleteSegmentRow,
  findSegment,
  insertSegment,
  listMemberRows,
  listSegmentRows,
  type MemberFilter,
  type MemberSlice,
  memberPhonesAfter,
  setSegmentCount,
} from './segment.repository.js';
import type { SegmentCreateBody, SegmentFilter } from './segment.schemas.js';
import type { SegmentTable } from './segment.tables.js';

/** The segment verbs: saved filters of end users, their counts and their members. */

const invalid = (field: string, message: string) => new AppError('INVALID_BODY', message, { details: { field } });
const VISIBLE = /[^\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cc}]/u;

function cleanTagList(values: readonly string[] | undefined, field: string): string[] | undefined {
  if (values === undefined) return undefined;
  const out: string[] = [];
  for (const [i, value] of values.entries()) {
    const tag = value.trim();
    if (!VISIBLE.test(tag) || tag.includes('\u0000')) {
      throw invalid(`${field}.${i}`, `Invalid body: '${field}.${i}' must be a tag (not blank).`);
    }
    if (Array.from(tag).length > 64)
      throw invalid(`${field}.${i}`, `Invalid body: '${field}.${i}' must be at most 64 characters.`);
    if (!out.includes(tag)) out.push(tag);
  }
  return out;
}

/** The filter as stored and shown: tags trimmed, every rule checked (the schema has checked the shape). */
export function cleanFilter(filter: SegmentFilter): SegmentFilter {
  const out: SegmentFilter = { ...filter };
  if (filter.tags) {
    const any = cleanTagList(filter.tags.any, 'filter.tags.any');
    const all = cleanTagList(filter.tags.all, 'filter.tags.all');
    out.tags = { ...(any ? { any } : {}), ...(all ? { all } : {}) };
  }
  if (filter.attributes) {
    const entries = Object.entries(filter.attributes);
    if (entries.length > MAX_SEGMENT_ATTRIBUTES) {
      throw invalid(
        'filter.attributes',
        `Invalid body: 'filter.attributes' must have at most ${MAX_SEGMENT_ATTRIBUTES} keys.`,
      );
    }
    for (const [key, value] of entries) {
      if (!ATTRIBUTE_KEY.test(key)) {
        throw invalid(
          'filter.attributes',
          `Invalid body: the attribute key '${key.slice(0, 64)}' must be 1 to 64 characters of A-Z, a-z, 0-9 and _.`,
        );
      }
      if (typeof value === 'string' && (Array.from(value).length > 1000 || value.includes('\u0000'))) {
        throw invalid(
          `filter.attributes.${key}`,
          `Invalid body: 'filter.attributes.${key}' must be at most 1000 characters.`,
        );
      }
      if (typeof value === 'number' && !Number.isFinite(value)) {
        throw invalid(`filter.attributes.${key}`, `Invalid body: 'filter.attributes.${key}' must be a finite number.`);
      }
    }
  }
  return out;
}

/** The filter as the SQL reads it. */
export function memberFilterOf(filter: SegmentFilter): MemberFilter {
  return {
    ...(filter.tags?.any ? { tagsAny: filter.tags.any } : {}),
    ...(filter.tags?.all ? { tagsAll: filter.tags.all } : {}),
    ...(filter.origin ? { origin: filter.origin } : {}),
    ...(filter.attributes
      ? {
          attributes: Object.entries(filter.attributes).map(([name, value]) => ({
            name,
            value: typeof value === 'string' ? value : JSON.stringify(value),
          })),
        }
      : {}),
    ...(filter.consent ? { consent: filter.consent } : {}),
    ...(filter.lastSeenAfter !== undefined ? { lastSeenAfter: filter.lastSeenAfter } : {}),
    ...(filter.lastSeenBefore !== undefined ? { lastSeenBefore: filter.lastSeenBefore } : {}),
    ...(filter.createdAfter !== undefined ? { createdAfter: filter.createdAfter } : {}),
  };
}

function toSegment(row: SegmentTable): Segment {
  return {
    id: row.id,
    name: row.name,
    filter: JSON.parse(row.filter) as SegmentFilter,
    count: Number(row.count),
    countedAt: Number(row.counted_at),
    createdAt: Number(row.created_at),
  };
}

const notFound = (id: string) =>
  new AppError('NOT_FOUND', SEGMENT_ID.test(id) ? `No segment with ID "${id}".` : 'No segment with this ID.');

/** How many end users a filter matches now (the dashboard's live count, before a segment is saved). */
export async function countFilter(db: Kysely<DB>, orgId: string, filter: SegmentFilter): Promise<number> {
  return countMembers(db, orgId, memberFilterOf(cleanFilter(filter)));
}

export async function createSegment(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  input: SegmentCreateBody,
): Promise<Segment> {
  const name = input.name.trim();
  if (!VISIBLE.test(name) || input.name.includes('\u0000'))
    throw invalid('name', "Invalid body: 'name' must not be blank.");
  if (Array.from(name).length > MAX_SEGMENT_NAME) {
    throw invalid('name', `Invalid body: 'name' must be at most ${MAX_SEGMENT_NAME} characters.`);
  }
  const filter = cleanFilter(input.filter);
  const now = clock.now();
  const count = await countMembers(db, orgId, memberFilterOf(filter));
  const row: SegmentTable = {
    id: newId('seg'),
    org_id: orgId,
    name,
    filter: JSON.stringify(filter),
    created_at: now,
    count,
    counted_at: now,
  };
  await insertSegment(db, row);
  return toSegment(row);
}

/** One segment, counted afresh (the count is kept for lists). */
export async function getSegment(db: Kysely<DB>, clock: Clock, orgId: string, id: string): Promise<Segment> {
  const row = SEGMENT_ID.test(id) ? await findSegment(db, orgId, id) : undefined;
  if (!row) throw notFound(id);
  const segment = toSegment(row);
  const count = await countMembers(db, orgId, memberFilterOf(segment.filter));
  const now = clock.now();
  await setSegmentCount(db, id, count, now);
  return { ...segment, count, countedAt: now };
}

/** A segment as stored (no count): what a send reads. */
export async function findSegmentById(db: Kysely<DB>, orgId: string, id: string): Promise<Segment | undefined> {
  const row = SEGMENT_ID.test(id) ? await findSegment(db, orgId, id) : undefined;
  return row ? toSegment(row) : undefined;
}

function decodeSeek(text: string | undefined, idShape: RegExp) {
  if (text === undefined) return undefined;
  const position = decodeCursor(text, idShape);
  if (!position) throw invalid('cursor', "Invalid query parameter: 'cursor' is not a cursor this API returned.");
  return { ...position, backward: false };
}

export async function listSegments(
  db: Kysely<DB>,
  orgId: string,
  query: { limit?: number; cursor?: string },
): Promise<{ data: Segment[]; nextCursor: string | null }> {
  const limit = query.limit ?? 50;
  const rows = await listSegmentRows(db, orgId, decodeSeek(query.cursor, SEGMENT_ID), limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map(toSegment),
    nextCursor: rows.length > limit && last ? encodeCursor(Number(last.created_at), last.id) : null,
  };
}

export async function listSegmentMembers(
  db: Kysely<DB>,
  orgId: string,
  id: string,
  query: { limit?: number; cursor?: string },
): Promise<{ data: EndUser[]; nextCursor: string | null }> {
  const segment = await findSegmentById(db, orgId, id);
  if (!segment) throw notFound(id);
  const limit = query.limit ?? 50;
  const seek = decodeSeek(query.cursor, /^eu_[0-9A-Za-z]{22}$/);
  const rows = await listMemberRows(db, orgId, memberFilterOf(segment.filter), seek, limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map(toEndUser),
    nextCursor: rows.length > limit && last ? encodeCursor(Number(last.created_at), last.id) : null,
  };
}

export async function deleteSegment(db: Kysely<DB>, orgId: string, id: string): Promise<{ id: string }> {
  const deleted = SEGMENT_ID.test(id) && (await deleteSegmentRow(db, orgId, id));
  if (!deleted) throw notFound(id);
  return { id };
}

export type { MemberSlice } from './segment.repository.js';

/** The next `limit` members of a segment's filter after `afterId`, in ID order: what a send walks. */
export async function membersAfter(
  db: Kysely<DB>,
  orgId: string,
  filter: SegmentFilter,
  afterId: string,
  limit: number,
): Promise<MemberSlice[]> {
  return memberPhonesAfter(db, orgId, memberFilterOf(filter), afterId, limit);
}
