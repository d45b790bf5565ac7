import { fromProviderDigits } from '../shared/phone.js';
import { type InboundKind, inboundKindOf } from './inbound-kinds.js';
import { PROVIDER_STATUSES, type ProviderStatus, type StatusEvent } from './message.model.js';
import {
  CLOCK_SKEW_MS,
  cleanId,
  cleanString,
  EARLIEST_TIME_MS,
  INT32_MAX,
  isObject,
  list,
  MAX_CALLBACK,
  MAX_ERROR_MESSAGE,
  MAX_ID,
  MAX_NAME,
} from './webhook-values.js';

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
  | ({
      readonly kind: 'inbound';
      readonly phoneNumberId: string | undefined;
      readonly providerMessageId: string;
      /** E.164 of the digits the provider reports. */
      readonly from: string;
      readonly name: string | undefined;
      readonly sentAt: number;
    } & InboundKind)
  | {
      /** A change to the business account or a number (a template's status, a number's quality). */
      readonly kind: 'account';
      readonly field: AccountField;
      /** `entry[].id`: the business account. */
      readonly accountId: string | undefined;
      readonly value: Record<string, unknown>;
      readonly receivedAt: number;
    };

/** The account-level webhook fields Parley applies (src/policies/ does, on its own queue). */
export const ACCOUNT_FIELDS = ['message_template_status_update', 'phone_number_quality_update'] as const;
export type AccountField = (typeof ACCOUNT_FIELDS)[number];

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
      if ((ACCOUNT_FIELDS as readonly unknown[]).includes(change.field)) {
        const accountId = cleanId(entry.id, 64);
        tasks.push({ kind: 'account', field: change.field as AccountField, accountId, value, receivedAt });
        continue;
      }
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
        tasks.push({
          kind: 'inbound',
          phoneNumberId,
          providerMessageId: id,
          from,
          name: names.get(from.slice(1)),
          sentAt: Math.min(providerTime(m.timestamp, receivedAt), receivedAt),
          ...inboundKindOf(m),
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
export type AccountTask = Extract<Task, { kind: 'account' }>;

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
