import { fromProviderDigits } from '../shared/phone.js';
import { PROVIDER_STATUSES, type ProviderStatus, type StatusEvent } from './message.model.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);

/*
 * Every value taken from a webhook is checked and bounded here, so that a well-signed but odd
 * payload is applied or skipped item by item and never makes the database refuse a write (a NUL in
 * text, a time past bigint, a fractional or huge error code in an integer column).
 */
const MAX_ID = 512;
const MAX_CALLBACK = 512;
const MAX_NAME = 256;
const MAX_TEXT = 65_536;
const MAX_ERROR_MESSAGE = 1024;
const INT32_MAX = 2 ** 31 - 1;
/** Provider times before this are not believable (the Cloud API did not exist). */
const EARLIEST_TIME_MS = Date.UTC(2015, 0, 1);
/** Provider clocks run a little ahead at most. */
const CLOCK_SKEW_MS = 60 * 60 * 1000;

/** A string without NUL characters (PostgreSQL text cannot hold them), at most `max` long; else undefined. */
function cleanString(v: unknown, max: number): string | undefined {
  if (typeof v !== 'string') return undefined;
  const s = v.includes('\u0000') ? v.replaceAll('\u0000', '') : v;
  return s.length <= max ? s : s.slice(0, max);
}

/** An identifier: a non-empty string of at most `max` characters, without NUL; anything else is no ID. */
function cleanId(v: unknown, max: number): string | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
  if (typeof v !== 'string' || v.length === 0 || v.length > max || v.includes('\u0000')) return undefined;
  return v;
}

/** A provider time (Unix seconds, as a string or a number) in ms, or `fallback` when it is not believable. */
export function providerTime(ts: unknown, fallback: number): number {
  const seconds = typeof ts === 'string' && /^\d{1,12}(\.\d+)?$/.test(ts.trim()) ? Number(ts) : ts;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return fallback;
  const ms = Math.floor(seconds * 1000);
  return ms >= EARLIEST_TIME_MS && ms <= fallback + CLOCK_SKEW_MS ? ms : fallback;
}

/** A provider error code that fits the integer column (a safe 32-bit integer), else null. */
export function providerErrorCode(v: unknown): number | null {
  const n = typeof v === 'string' && /^-?\d{1,10}$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && Math.abs(n) <= INT32_MAX ? n : null;
}

export type Task =
  | {
      readonly kind: 'status';
      /** `metadata.phone_number_id`; undefined when the webhook does not say. */
      readonly phoneNumberId: string | undefined;
      readonly providerMessageId: string;
      readonly callbackData: string | undefined;
      readonly event: StatusEvent;
    }
  | {
      readonly kind: 'inbound';
      readonly phoneNumberId: string | undefined;
      readonly providerMessageId: string;
      /** E.164 of the digits the provider reports. */
      readonly from: string;
      readonly name: string | undefined;
      /** The provider's message type (`text`, `image`, `button`...). */
      readonly type: string;
      readonly text: string | null;
      readonly sentAt: number;
    };

export interface SkippedItem {
  readonly kind: 'inbound' | 'status';
  readonly id: string | undefined;
  readonly reason: string;
}

/** Splits a webhook into one task per message and status, across every entry and change. */
export function tasksOf(payload: unknown, receivedAt: number): { tasks: Task[]; skipped: SkippedItem[] } {
  const tasks: Task[] = [];
  const skipped: SkippedItem[] = [];
  if (!isObject(payload)) return { tasks, skipped };
  for (const entry of list(payload.entry)) {
    for (const change of list(entry.changes)) {
      const value = isObject(change.value) ? change.value : undefined;
      if (!value) continue;
      const phoneNumberId = cleanId(isObject(value.metadata) ? value.metadata.phone_number_id : undefined, 64);
      const names = new Map<string, string>();
      for (const contact of list(value.contacts)) {
        const waId = cleanId(contact.wa_id, 32);
        const name = cleanString(isObject(contact.profile) ? contact.profile.name : undefined, MAX_NAME)?.trim();
        if (waId && name) names.set(waId, name);
      }
      for (const m of list(value.messages)) {
        const id = cleanId(m.id, MAX_ID);
        const from = fromProviderDigits(m.from);
        if (!id || !from) {
          skipped.push({ kind: 'inbound', id, reason: id ? 'the sender is not a phone number' : 'no message ID' });
          continue;
        }
        const text = cleanString(isObject(m.text) ? m.text.body : undefined, MAX_TEXT);
        tasks.push({
          kind: 'inbound',
          phoneNumberId,
          providerMessageId: id,
          from,
          name: names.get(from.slice(1)),
          type: cleanString(m.type, 32) || 'text',
          text: text ?? null,
          sentAt: Math.min(providerTime(m.timestamp, receivedAt), receivedAt),
        });
      }
      for (const s of list(value.statuses)) {
        const id = cleanId(s.id, MAX_ID);
        const status = s.status;
        if (!id || typeof status !== 'string' || !(PROVIDER_STATUSES as readonly string[]).includes(status)) {
          skipped.push({ kind: 'status', id, reason: id ? 'unknown status' : 'no message ID' });
          continue;
        }
        const error = list(s.errors)[0];
        const details = error && isObject(error.error_data) ? error.error_data.details : undefined;
        const errorMessage = error
          ? (cleanString(details, MAX_ERROR_MESSAGE) ??
            cleanString(error.message, MAX_ERROR_MESSAGE) ??
            cleanString(error.title, MAX_ERROR_MESSAGE) ??
            null)
          : null;
        tasks.push({
          kind: 'status',
          phoneNumberId,
          providerMessageId: id,
          callbackData: cleanId(s.biz_opaque_callback_data, MAX_CALLBACK),
          event: {
            status: status as ProviderStatus,
            occurredAt: providerTime(s.timestamp, receivedAt),
            receivedAt,
            errorCode: error ? providerErrorCode(error.code) : null,
            errorMessage,
          },
        });
      }
    }
  }
  return { tasks, skipped };
}

export type StatusTask = Extract<Task, { kind: 'status' }>;
export type InboundTask = Extract<Task, { kind: 'inbound' }>;

/** A body's JSON, or undefined when it is not JSON (its tasks are then none). */
export function parseBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** The tasks of a stored body (the raw text, as signed). */
export const tasksOfBody = (body: string, receivedAt: number): Task[] => tasksOf(parseBody(body), receivedAt).tasks;
