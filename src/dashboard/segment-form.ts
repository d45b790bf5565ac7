import type { SegmentFilter } from '../segments/segment.schemas.js';
import { field } from './page-kit.js';

/** The segment builder's form fields, and the filter they make (what POST /api/segments takes). */

export interface SegmentFormValues {
  name: string;
  tagsAny: string;
  tagsAll: string;
  attributes: string;
  consent: string;
  origin: string;
  lastSeenAfter: string;
  lastSeenBefore: string;
  createdAfter: string;
}

export const emptySegmentForm: SegmentFormValues = {
  name: '',
  tagsAny: '',
  tagsAll: '',
  attributes: '',
  consent: '',
  origin: '',
  lastSeenAfter: '',
  lastSeenBefore: '',
  createdAfter: '',
};

export function segmentFormOf(form: unknown): SegmentFormValues {
  const out = { ...emptySegmentForm };
  for (const name of Object.keys(out) as (keyof SegmentFormValues)[]) out[name] = field(form, name).slice(0, 5000);
  return out;
}

/** A refused form: the sentence to show beside the fields. */
export class SegmentFormError extends Error {}

const list = (text: string) =>
  text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);

/** A date (YYYY-MM-DD) as the start of that day, UTC, in ms. */
function dayOf(text: string, label: string): number | undefined {
  if (!text.trim()) return undefined;
  const ms = Date.parse(`${text.trim()}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text.trim()) || Number.isNaN(ms)) {
    throw new SegmentFormError(`${label} must be a date (YYYY-MM-DD).`);
  }
  return ms;
}

export function filterOfForm(values: SegmentFormValues): SegmentFilter {
  const filter: SegmentFilter = {};
  const any = list(values.tagsAny);
  const all = list(values.tagsAll);
  if (any.length > 0 || all.length > 0)
    filter.tags = { ...(any.length ? { any } : {}), ...(all.length ? { all } : {}) };
  const lines = values.attributes
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.length > 0) {
    const attributes: Record<string, string> = {};
    for (const line of lines) {
      const at = line.indexOf(':');
      if (at <= 0) throw new SegmentFormError(`Write each attribute as key:value ("${line.slice(0, 40)}" is not).`);
      attributes[line.slice(0, at).trim()] = line.slice(at + 1).trim();
    }
    filter.attributes = attributes;
  }
  if (values.consent === 'granted' || values.consent === 'not_denied') filter.consent = values.consent;
  if (values.origin === 'inbound' || values.origin === 'imported' || values.origin === 'manual') {
    filter.origin = values.origin;
  }
  const after = dayOf(values.lastSeenAfter, 'Last seen after');
  if (after !== undefined) filter.lastSeenAfter = after;
  const before = dayOf(values.lastSeenBefore, 'Last seen before');
  if (before !== undefined) filter.lastSeenBefore = before;
  const created = dayOf(values.createdAfter, 'Created after');
  if (created !== undefined) filter.createdAfter = created;
  return filter;
}

/** A filter in words, for lists. */
export function describeFilter(filter: SegmentFilter): string {
  const parts: string[] = [];
  if (filter.tags?.any) parts.push(`tagged any of ${filter.tags.any.join(', ')}`);
  if (filter.tags?.all) parts.push(`tagged all of ${filter.tags.all.join(', ')}`);
  for (const [k, v] of Object.entries(filter.attributes ?? {})) parts.push(`${k} is ${String(v)}`);
  if (filter.consent === 'granted') parts.push('consent granted');
  if (filter.consent === 'not_denied') parts.push('consent not denied');
  if (filter.origin) parts.push(`origin ${filter.origin}`);
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  if (filter.lastSeenAfter !== undefined) parts.push(`last seen from ${day(filter.lastSeenAfter)}`);
  if (filter.lastSeenBefore !== undefined) parts.push(`last seen before ${day(filter.lastSeenBefore)}`);
  if (filter.createdAfter !== undefined) parts.push(`created from ${day(filter.createdAfter)}`);
  return parts.length > 0 ? parts.join('; ') : 'every end user';
}
