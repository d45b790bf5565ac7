import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import { recordInboundEndUser } from '../end-users/end-user.service.js';
import { endUserPhoneOf, fromProviderDigits, windowKey } from '../numbers/phone.js';
import type { Clock } from '../shared/clock.js';
import { isAppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  adoptProviderMessageId,
  applyPendingStatuses,
  applyStatus,
  findMessageForStatus,
  openWindow,
  PENDING_STATUS_TTL_MS,
  PROVIDER_STATUSES,
  type ProviderStatus,
  purgePendingStatuses,
  type StatusEvent,
  storePendingStatus,
} from './message.repository.js';
import type { WebhookInboxState } from './messaging.tables.js';

/** Checks `X-Hub-Signature-256` against the raw bytes, in constant time. */
export function verifySignature(appSecret: string, raw: Buffer, header: string | undefined): boolean {
  if (!header?.startsWith('sha256=')) return false;
  const given = Buffer.from(header.slice(7), 'hex');
  const expected = createHmac('sha256', appSecret).update(raw).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}

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

const insertInbox = precompiled((db) =>
  db.insertInto('webhook_inbox').values({ id: slot(0), body: slot(1), received_at: slot(2) }),
);
const deleteInbox = precompiled((db) => db.deleteFrom('webhook_inbox').where('id', '=', slot<string>(0)));
const numberByPhoneNumberId = precompiled((db) =>
  db.selectFrom('messaging_numbers').select(['id', 'org_id']).where('phone_number_id', '=', slot<string>(0)),
);

/** In-process retries of a failing task: 5 attempts in all, about 40 s apart at most. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [500, 2_000, 8_000, 30_000];
/** How often a process deletes expired pending statuses (as statuses come in, so no timer to stop). */
const PURGE_EVERY_MS = 10 * 60 * 1000;

/** What became of one body: applied (and deleted), or kept out of the live queue. */
export type BodyOutcome = 'applied' | 'failed' | 'unrouted';

/** What became of the inbound message a caller waits for (the sandbox helper). */
export type InboundOutcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'failed' | 'unknown number' | 'timeout'; readonly retrying: boolean };

export interface StoredWebhook {
  readonly id: string;
  readonly state: Exclude<WebhookInboxState, 'live'>;
  readonly receivedAt: number;
  readonly failedAt: number | null;
  readonly attempts: number;
  readonly error: string | null;
  /** The phone number IDs no number had, for an unrouted body. */
  readonly phoneNumberIds: string[];
  /** Messages and statuses in the body. */
  readonly items: number;
}

interface Body {
  readonly id: string;
  left: number;
  /** Most attempts any of its tasks took in this run. */
  attempts: number;
  /** Attempts of earlier runs (a replayed failed body). */
  readonly priorAttempts: number;
  error: string | undefined;
  readonly unrouted: Set<string>;
  /** Replayed from the inbox (after a crash, or by an operator): steps a first run may have missed run again. */
  readonly replay: boolean;
  readonly done: (outcome: BodyOutcome) => void;
}

interface Queued {
  readonly task: Task;
  readonly body: Body;
  readonly attempt: number;
}

type TaskOutcome = 'applied' | 'unrouted';

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 1000);

/**
 * A webhook body is written to the inbox table, acknowledged, then processed a few tasks at a
 * time. A task that fails is retried in-process with backoff (`retryDelaysMs`); once every task of
 * a body is done, its row is deleted, or kept out of the live queue: `failed` (a task still failed
 * after its last attempt: the error and the attempts are kept, and logged at error level) or
 * `unrouted` (an inbound message for a phone number ID no number has). Neither is ever dropped;
 * `replayStored()` (CLI `parley webhooks retry`, or adding the number) applies them again. A body
 * still `live` after a stop (crash, or retries cut short by shutdown) is queued again by
 * `recover()` at the next start. Every step is idempotent (dedupe on inbound message ID and on
 * (message, status); statuses only move forward), so concurrency and replays are harmless.
 */
export class WebhookProcessor {
  /** Waits before the 2nd, 3rd, ... attempt of a failing task; tests shorten it. */
  retryDelaysMs: readonly number[];
  private readonly queue: Queued[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inboundWaiters = new Map<string, (outcome: InboundOutcome) => void>();
  private running = 0;
  private waiters: (() => void)[] = [];
  private closing = false;
  private lastPurge = Number.NEGATIVE_INFINITY;
  private readonly concurrency: number;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: { concurrency?: number; retryDelaysMs?: readonly number[] } = {},
  ) {
    this.concurrency = options.concurrency ?? 8;
    this.retryDelaysMs = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  }

  /**
   * Stores one verified webhook body and queues its work; resolves (with how many tasks it holds)
   * once the body is stored, which is when it may be acknowledged.
   */
  async receive(raw: string, payload: unknown): Promise<number> {
    const receivedAt = this.clock.now();
    const { tasks, skipped } = tasksOf(payload, receivedAt);
    if (skipped.length > 0) this.logger.warn({ skipped }, 'webhook items skipped: not something Parley can apply');
    if (tasks.length === 0) return 0;
    const inboxId = newId('evt');
    await insertInbox(this.db, [inboxId, raw, receivedAt]);
    this.enqueue(inboxId, tasks, { replay: false, priorAttempts: 0 });
    return tasks.length;
  }

  /** Queues again the live bodies left in the inbox by an earlier run; returns how many there were. */
  async recover(): Promise<number> {
    await this.purgePending();
    const rows = await this.db
      .selectFrom('webhook_inbox')
      .select(['id', 'body', 'received_at', 'attempts'])
      .where('state', '=', 'live')
      .orderBy('received_at')
      .orderBy('id')
      .execute();
    for (const row of rows) {
      const tasks = tasksOf(parse(row.body), Number(row.received_at)).tasks;
      if (tasks.length === 0) await deleteInbox(this.db, [row.id]);
      else this.enqueue(row.id, tasks, { replay: true, priorAttempts: Number(row.attempts) });
    }
    if (rows.length > 0) this.logger.info({ bodies: rows.length }, 'replaying unprocessed provider webhooks');
    return rows.length;
  }

  /** The bodies kept out of the live queue (failed or unrouted), oldest first. */
  async listStored(): Promise<StoredWebhook[]> {
    const rows = await this.db
      .selectFrom('webhook_inbox')
      .selectAll()
      .where('state', '!=', 'live')
      .orderBy('received_at')
      .orderBy('id')
      .execute();
    return rows.map((row) => ({
      id: row.id,
      state: row.state === 'unrouted' ? 'unrouted' : 'failed',
      receivedAt: Number(row.received_at),
      failedAt: row.failed_at === null ? null : Number(row.failed_at),
      attempts: Number(row.attempts),
      error: row.last_error,
      phoneNumberIds: (row.phone_number_ids ?? '').split(',').filter(Boolean),
      items: tasksOf(parse(row.body), Number(row.received_at)).tasks.length,
    }));
  }

  /**
   * Applies stored bodies again: every failed and unrouted one, or the one with `id`, or the
   * unrouted ones naming `phoneNumberId` (a number was just added). Resolves once each is applied or
   * kept again, with what became of it.
   */
  async replayStored(
    filter: { id?: string; phoneNumberId?: string } = {},
  ): Promise<{ id: string; outcome: BodyOutcome }[]> {
    let query = this.db
      .selectFrom('webhook_inbox')
      .select(['id', 'body', 'received_at', 'attempts'])
      .where('state', '!=', 'live');
    if (filter.id !== undefined) query = query.where('id', '=', filter.id);
    if (filter.phoneNumberId !== undefined) {
      query = query.where('state', '=', 'unrouted').where('phone_number_ids', 'like', `%,${filter.phoneNumberId},%`);
    }
    const rows = await query.orderBy('received_at').orderBy('id').execute();
    const results: Promise<{ id: string; outcome: BodyOutcome }>[] = [];
    for (const row of rows) {
      // Back in the live queue first: if this process stops midway, the next start replays it.
      await this.db.updateTable('webhook_inbox').set({ state: 'live' }).where('id', '=', row.id).execute();
      const tasks = tasksOf(parse(row.body), Number(row.received_at)).tasks;
      if (tasks.length === 0) {
        await deleteInbox(this.db, [row.id]);
        results.push(Promise.resolve({ id: row.id, outcome: 'applied' }));
        continue;
      }
      results.push(
        new Promise((resolve) =>
          this.enqueue(row.id, tasks, {
            replay: true,
            priorAttempts: Number(row.attempts),
            done: (outcome) => resolve({ id: row.id, outcome }),
          }),
        ),
      );
    }
    return Promise.all(results);
  }

  /**
   * Resolves once the inbound message `providerMessageId` has been applied, or could not be (its
   * first attempt failed, or its number is unknown), or after `timeoutMs`. Register before the
   * webhook can arrive.
   */
  waitForInbound(providerMessageId: string, timeoutMs: number): Promise<InboundOutcome> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.inboundWaiters.delete(providerMessageId);
        resolve({ ok: false, reason: 'timeout', retrying: false });
      }, timeoutMs);
      this.inboundWaiters.set(providerMessageId, (outcome) => {
        clearTimeout(timer);
        this.inboundWaiters.delete(providerMessageId);
        resolve(outcome);
      });
    });
  }

  /** Resolves once nothing is queued, running or waiting for a retry. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * Shutdown: stops retrying (a body waiting for a retry stays live in the inbox, for the next
   * start) and waits for the queue to drain.
   */
  async close(): Promise<void> {
    this.closing = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.wakeIfIdle();
    await this.idle();
  }

  private isIdle(): boolean {
    return this.running === 0 && this.queue.length === 0 && this.timers.size === 0;
  }

  private wakeIfIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  private enqueue(
    inboxId: string,
    tasks: readonly Task[],
    options: { replay: boolean; priorAttempts: number; done?: (outcome: BodyOutcome) => void },
  ): void {
    const body: Body = {
      id: inboxId,
      left: tasks.length,
      attempts: 1,
      priorAttempts: options.priorAttempts,
      error: undefined,
      unrouted: new Set(),
      replay: options.replay,
      done: options.done ?? (() => {}),
    };
    for (const task of tasks) this.queue.push({ task, body, attempt: 1 });
    this.pump();
  }

  private pump(): void {
    while (this.running < this.concurrency && this.queue.length > 0) {
      const next = this.queue.shift();
      if (!next) break;
      this.running++;
      this.run(next)
        .then(
          (outcome) => this.taskDone(next, outcome),
          (err: unknown) => this.taskFailed(next, err),
        )
        .catch((err: unknown) => this.logger.error({ err }, 'could not record what became of a webhook body'))
        .finally(() => {
          this.running--;
          this.pump();
          this.wakeIfIdle();
        });
    }
  }

  private run({ task, body, attempt }: Queued): Promise<TaskOutcome> {
    if (task.kind === 'status') return this.applyStatusTask(task);
    return this.applyInbound(task, body.replay || attempt > 1);
  }

  private async taskDone(item: Queued, outcome: TaskOutcome): Promise<void> {
    const { task, body } = item;
    if (task.kind === 'inbound') {
      this.notifyInbound(
        task.providerMessageId,
        outcome === 'applied' ? { ok: true } : { ok: false, reason: 'unknown number', retrying: false },
      );
    }
    if (outcome === 'unrouted') body.unrouted.add(task.phoneNumberId ?? '');
    await this.settle(body);
  }

  private async taskFailed(item: Queued, err: unknown): Promise<void> {
    const { task, body, attempt } = item;
    const delay = this.retryDelaysMs[attempt - 1];
    const retrying = delay !== undefined && !this.closing;
    if (task.kind === 'inbound') this.notifyInbound(task.providerMessageId, { ok: false, reason: 'failed', retrying });
    if (retrying) {
      this.logger.warn(
        { err, kind: task.kind, inboxId: body.id, attempt, retryInMs: delay },
        'webhook task failed; retrying',
      );
      body.attempts = Math.max(body.attempts, attempt + 1);
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.queue.push({ task, body, attempt: attempt + 1 });
        this.pump();
        this.wakeIfIdle();
      }, delay);
      this.timers.add(timer);
      return;
    }
    if (this.closing) return; // left live in the inbox: the next start replays it
    body.error = errorText(err);
    body.attempts = Math.max(body.attempts, attempt);
    await this.settle(body);
  }

  /** Counts a finished task; the last one of a body deletes its inbox row, or keeps it out of the queue. */
  private async settle(body: Body): Promise<void> {
    body.left--;
    if (body.left > 0) return;
    try {
      await this.finish(body);
    } catch (err) {
      // The row stays live in the inbox (the next start replays it); whoever waits is not left hanging.
      body.done('failed');
      throw err;
    }
  }

  private async finish(body: Body): Promise<void> {
    const now = this.clock.now();
    const attempts = body.priorAttempts + body.attempts;
    if (body.error !== undefined) {
      await this.db
        .updateTable('webhook_inbox')
        .set({ state: 'failed', attempts, last_error: body.error, failed_at: now, phone_number_ids: null })
        .where('id', '=', body.id)
        .execute();
      this.logger.error(
        { inboxId: body.id, attempts, error: body.error },
        'webhook body failed after its retries; kept as a failed webhook (parley webhooks failed / retry)',
      );
      body.done('failed');
    } else if (body.unrouted.size > 0) {
      const ids = [...body.unrouted];
      await this.db
        .updateTable('webhook_inbox')
        .set({
          state: 'unrouted',
          attempts,
          last_error: `unknown number: no messaging number has phone number ID ${ids.map((id) => `'${id}'`).join(', ')}`,
          failed_at: now,
          phone_number_ids: `,${ids.join(',')},`,
        })
        .where('id', '=', body.id)
        .execute();
      this.logger.warn(
        { inboxId: body.id, phoneNumberIds: ids },
        'inbound message for an unknown number kept as an unrouted webhook; adding the number replays it',
      );
      body.done('unrouted');
    } else {
      await deleteInbox(this.db, [body.id]);
      body.done('applied');
    }
  }

  private notifyInbound(providerMessageId: string, outcome: InboundOutcome): void {
    this.inboundWaiters.get(providerMessageId)?.(outcome);
  }

  /** Deletes pending statuses past the provider's retry horizon, at most every 10 minutes. */
  private async purgePending(): Promise<void> {
    const now = this.clock.now();
    if (now - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = now;
    try {
      const purged = await purgePendingStatuses(this.db, now - PENDING_STATUS_TTL_MS);
      if (purged > 0) this.logger.info({ purged }, 'deleted statuses of unknown messages older than 7 days');
    } catch (err) {
      this.logger.error({ err }, 'could not delete expired pending statuses');
    }
  }

  private async applyStatusTask(task: Extract<Task, { kind: 'status' }>): Promise<TaskOutcome> {
    await this.purgePending();
    const { providerMessageId, phoneNumberId } = task;
    const found = await findMessageForStatus(this.db, providerMessageId, task.callbackData, phoneNumberId);
    if (found) {
      if (found.providerMessageId === null) {
        // The send never learnt this ID (it timed out, say): the status proves the provider took it.
        await adoptProviderMessageId(this.db, found.id, providerMessageId, task.event.receivedAt);
        await applyStatus(this.db, found.id, task.event);
        await applyPendingStatuses(this.db, found.id, providerMessageId, phoneNumberId);
        return 'applied';
      }
      await applyStatus(this.db, found.id, task.event);
      return 'applied';
    }
    await storePendingStatus(this.db, providerMessageId, task.event, phoneNumberId);
    // The send may have stored its provider ID between our lookup and the insert above.
    const late = await findMessageForStatus(this.db, providerMessageId, undefined, phoneNumberId);
    if (late) await applyPendingStatuses(this.db, late.id, providerMessageId, phoneNumberId);
    return 'applied';
  }

  /**
   * Stores the inbound message and opens the window for the sender the provider reports (E.164 of
   * its digits), in one transaction; then records the end user, best effort: by a phone the
   * end-user records accept, or not at all (logged) when the sender has none. `again` (a retry or a
   * replay) records the end user even when the message was stored by an earlier attempt.
   */
  private async applyInbound(task: Extract<Task, { kind: 'inbound' }>, again: boolean): Promise<TaskOutcome> {
    const number = task.phoneNumberId
      ? (await numberByPhoneNumberId(this.db, [task.phoneNumberId])).rows[0]
      : undefined;
    if (!number) return 'unrouted';
    const stored = await this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('inbound_messages')
        .values({
          provider_message_id: task.providerMessageId,
          org_id: number.org_id,
          number_id: number.id,
          from_phone: task.from,
          text: task.text,
          sent_at: task.sentAt,
          received_at: this.clock.now(),
        })
        .onConflict((oc) => oc.column('provider_message_id').doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return false; // a redelivery
      await openWindow(trx, number.id, windowKey(task.from), task.sentAt);
      return true;
    });
    if (stored || again) await this.recordEndUser(number.org_id, task);
    return 'applied';
  }

  private async recordEndUser(orgId: string, task: Extract<Task, { kind: 'inbound' }>): Promise<void> {
    const phone = endUserPhoneOf(task.from);
    const skip = () =>
      this.logger.warn(
        { from: task.from, providerMessageId: task.providerMessageId },
        'inbound sender has no phone number the end-user records accept; message stored and window opened, no end user recorded',
      );
    if (!phone) return skip();
    try {
      await recordInboundEndUser(this.db, this.clock, {
        orgId,
        phone,
        ...(task.name ? { name: task.name } : {}),
        at: task.sentAt,
      });
    } catch (err) {
      if (isAppError(err) && err.code === 'INVALID_BODY') return skip();
      throw err;
    }
  }
}

function parse(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
