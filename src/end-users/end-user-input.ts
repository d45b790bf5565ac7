import { AppError } from '../shared/errors.js';
import { normalizePhone } from '../shared/phone.js';
import {
  ATTRIBUTE_KEY,
  type Attributes,
  type AttributeValue,
  type ChannelIdentifiers,
  type ConsentMap,
  MAX_ATTRIBUTE_TEXT,
  MAX_ATTRIBUTES,
  type Origin,
} from './end-user.model.js';
import type { EndUserBatchItem } from './end-user.schemas.js';
import { MAX_NAME, MAX_TAG } from './end-user.schemas.js';
import type { EndUserTable } from './end-user.table.js';
import { normalizeEmail, searchKey } from './normalize.js';

/** An end user's fields as given, checked and normalized into the row stored; and what a refused write says. */

export const invalid = (field: string, message: string) =>
  new AppError('INVALID_BODY', message, { details: { field } });

/** Something a reader would see: not only spaces, zero-width or other invisible characters. */
export const VISIBLE = /[^\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cc}]/u;

/** Length in characters (code points), as the schemas count it. */
export const lengthOf = (text: string) => (text.length <= 64 ? text.length : Array.from(text).length);

// Also checked here, not only by the HTTP layer: the CSV import reaches the service directly, and
// PostgreSQL cannot store a NUL in text.
function refuseNul(value: string, field: string): void {
  if (value.includes('\u0000')) throw invalid(field, `Invalid body: '${field}' must not contain a NUL character.`);
}

export function cleanName(value: string, field = 'name'): string {
  refuseNul(value, field);
  const name = value.trim();
  if (!VISIBLE.test(name)) throw invalid(field, `Invalid body: '${field}' must not be blank.`);
  if (lengthOf(name) > MAX_NAME) {
    throw invalid(field, `Invalid body: '${field}' must be at most ${MAX_NAME} characters.`);
  }
  return name;
}

export function cleanEmail(value: string, field = 'email'): string {
  refuseNul(value, field);
  const email = normalizeEmail(value);
  if (!email) throw invalid(field, `Invalid body: '${field}' is not a valid email address.`);
  return email;
}

export function cleanPhone(value: string, country: string | null, field = 'phone'): string {
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

export function cleanTags(values: readonly string[]): string[] {
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

function cleanAttributeValue(value: unknown, field: string): AttributeValue {
  if (typeof value === 'string') {
    refuseNul(value, field);
    if (lengthOf(value) > MAX_ATTRIBUTE_TEXT) {
      throw invalid(field, `Invalid body: '${field}' must be at most ${MAX_ATTRIBUTE_TEXT} characters.`);
    }
    return value;
  }
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw invalid(field, `Invalid body: '${field}' must be a string, a number or a boolean.`);
}

function checkAttributeKey(key: string): void {
  if (!ATTRIBUTE_KEY.test(key)) {
    const shown = key.length > 70 ? `${key.slice(0, 64)}...` : key;
    throw invalid(
      `attributes.${shown}`,
      `Invalid body: the attribute key '${shown}' must be 1 to 64 characters of A-Z, a-z, 0-9 and _.`,
    );
  }
}

function checkAttributeCount(attributes: Attributes): void {
  if (Object.keys(attributes).length > MAX_ATTRIBUTES) {
    throw invalid('attributes', `Invalid body: 'attributes' must have at most ${MAX_ATTRIBUTES} keys.`);
  }
}

/** Attributes as given on create or batch, checked against every rule. */
export function cleanAttributes(input: Record<string, unknown>): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(input)) {
    checkAttributeKey(key);
    out[key] = cleanAttributeValue(value, `attributes.${key}`);
  }
  checkAttributeCount(out);
  return out;
}

/** A PATCH's attributes merged key by key into the current ones: null removes a key, a null object all. */
export function mergeAttributes(current: Attributes, patch: Record<string, unknown> | null): Attributes {
  if (patch === null) return {};
  const out: Attributes = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    checkAttributeKey(key);
    if (value === null) delete out[key];
    else out[key] = cleanAttributeValue(value, `attributes.${key}`);
  }
  checkAttributeCount(out);
  return out;
}

/** How an attribute value is stored for the filter, and compared: numbers and booleans as their JSON text. */
export const attributeText = (value: AttributeValue): string =>
  typeof value === 'string' ? value : JSON.stringify(value);

/** The end_user_attributes rows of one record. */
export function attributeRows(orgId: string, endUserId: string, attributes: Attributes) {
  return Object.entries(attributes).map(([name, value]) => ({
    end_user_id: endUserId,
    org_id: orgId,
    name,
    value: attributeText(value),
  }));
}

type ConsentInput = { status: 'granted' | 'denied' | 'unknown'; updatedAt?: number; source?: string };
export function toConsentState(input: ConsentInput, now: number, field: string) {
  if (input.source !== undefined) refuseNul(input.source, `${field}.source`);
  return { status: input.status, updatedAt: input.updatedAt ?? now, source: input.source?.trim() || 'api' };
}

/** The normalized columns of one create or batch item; throws INVALID_BODY naming the field. */
export function prepareRow(
  orgId: string,
  origin: Origin,
  item: EndUserBatchItem,
  country: string | null,
  now: number,
  id: string,
): { row: EndUserTable; tags: string[]; attributes: Attributes } {
  const name = item.name === undefined ? null : cleanName(item.name);
  const email = item.email === undefined ? null : cleanEmail(item.email);
  const phone = item.phone === undefined ? null : cleanPhone(item.phone, country);
  if (name === null && email === null && phone === null) {
    throw new AppError('INVALID_BODY', 'Invalid body: give at least one of name, email, phone.');
  }
  const tags = cleanTags(item.tags ?? []);
  const attributes = cleanAttributes(item.attributes ?? {});
  const channelIdentifiers: ChannelIdentifiers = {};
  if (item.channelIdentifiers?.msgapp !== undefined) {
    channelIdentifiers.msgapp = cleanPhone(item.channelIdentifiers.msgapp, country, 'channelIdentifiers.msgapp');
  }
  const consent: ConsentMap = {};
  if (item.consent?.msgapp) consent.msgapp = toConsentState(item.consent.msgapp, now, 'consent.msgapp');
  return {
    tags,
    attributes,
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
      attributes: JSON.stringify(attributes),
      created_at: now,
      last_seen_at: null,
      updated_at: now,
    },
  };
}

export const duplicateMessage = (field: string) => `An end user with this ${field} already exists.`;
export const REFUSED = 'The end user could not be created: the database refused the record.';
export const BUSY = 'The end user could not be created: the database was too busy; retry.';
