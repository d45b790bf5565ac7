import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { joinInbound } from '../conversations/inbound.js';
import { raiseMessageStatuses, raiseStatusesOfMessages } from '../conversations/status-events.js';
import { isPostgres, precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import { findEndUserById } from '../end-users/end-user.repository.js';
import { recordInboundEndUser } from '../end-users/end-user.service.js';
import { EVENT_DELIVERY_QUEUE } from '../events/event.service.js';
import type { JobInfo, JobRunner } from '../jobs/job-runner.js';
import type { Clock } from '../shared/clock.js';
import { isAppError } from '../shared/errors.js';
import { endUserPhoneOf, fromProviderDigits, windowKey } from '../shared/phone.js';
import {
  adoptProviderMessageId,
  applyPendingStatuses,
  applyStatus,
  applyStatuses,
  findMessageForStatus,
  lockMessagesForStatuses,
  messagesWithPendingStatuses,
  openWindow,
  PENDING_STATUS_TTL_MS,
  PROVIDER_STATUSES,
  type ProviderStatus,
  purgePendingStatuses,
  type StatusEvent,
  type StatusTargetOfAgent,
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

const numberByPhoneNumberId = precompiled((db) =>
  db.selectFrom('messaging_numbers').select(['id', 'org_id']).where('phone_number_id', '=', slot<string>(0)),
);

/** The job queue of provider webhook bodies. */
export const PROVIDER_WEBHOOK_QUEUE = 'provider-webhook';

/** A provider webhook body waiting to be applied: the job's payload. */
export interface ProviderWebhookJob {
  /** The raw body, as signed. */
  readonly raw: string;
  readonly receivedAt: number;
}

/** Retries of a failing body: 5 attempts in all, about 40 s apart at most. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [500, 2_000, 8_000, 30_000];
/**
 * How often a process tidies pending statuses: deletes the expired ones, applies those whose message
 * is known by now (as statuses come in, so no timer to stop).
 */
const PURGE_EVERY_MS = 10 * 60 * 1000;
/** Messages with pending statuses handled per read when tidying them. */
const PENDING_BATCH = 100;
/** How often a caller waiting for an inbound message looks whether another node applied it. */
const INBOUND_POLL_MS = 200;

/** What became of one body: applied, or kept out of the queue. */
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

/** What applying every task of a body came to. */
interface Applied {
  /** The phone number IDs of inbound messages no number has. */
  readonly unrouted: Set<string>;
  /** The first error of a task that failed (the others were still applied). */
  readonly error: unknown;
  readonly failed: boolean;
}

type TaskOutcome = 'applied' | 'unrouted';

/**
 * Bodies of statuses applied together, and how many such batches run at once per process. On
 * SQLite one at a time: its one connection would run them one after the other anyway, and as
 * better-sqlite3 never waits for I/O, batches claimed together ran back to back in one turn of the
 * event loop, every other request waiting for the last of them to commit.
 */
const STATUS_BATCH = 100;
const STATUS_BATCH_CONCURRENCY = { postgres: 4, sqlite: 1 } as const;

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 1000);

export interface WebhookProcessorOptions {
  /** The job runner whose `provider-webhook` queue applies received bodies (the server's). */
  readonly jobs?: JobRunner;
  readonly retryDelaysMs?: readonly number[];
  /** Batches of bodies applied at once in one process. */
  readonly concurrency?: number;
  /** Idle time after which a conversation is closed (an inbound message then opens a new one). */
  readonly conversationIdleMs?: number;
}

/**
 * A verified webhook body is stored as a job of the durable job runner before it is acknowledged,
 * then applied by whichever node claims it: every message and status in it, each on its own (one
 * failing does not stop the others). A body with a failing task is retried on `retryDelaysMs`;
 * after its last attempt it is kept in `webhook_inbox` as `failed` (with the error and the
 * attempts, logged at error level), and a body with an inbound message for a phone number ID no
 * number has is kept there as `unrouted`. Neither is ever dropped; `replayStored()` (CLI `parley
 * webhooks retry`, or adding the number) applies them again. Every step is idempotent (dedupe on
 * inbound message ID and on (message, status); statuses only move forward), so a job that runs
 * again after a crash, or a replay, is harmless.
 */
export class WebhookProcessor {
  /** Waits before the 2nd, 3rd, ... attempt of a failing body; tests shorten it. */
  retryDelaysMs: readonly number[];
  private readonly inboundWaiters = new Map<string, (outcome: InboundOutcome) => void>();
  private lastPurge = Number.NEGATIVE_INFINITY;
  private readonly jobs: JobRunner | undefined;
  private readonly conversationIdleMs: number;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: WebhookProcessorOptions = {},
  ) {
    this.retryDelaysMs = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.jobs = options.jobs;
    this.conversationIdleMs = options.conversationIdleMs ?? 24 * 60 * 60 * 1000;
    if (this.jobs) {
      const processor = this;
      this.jobs.define<ProviderWebhookJob>({
        name: PROVIDER_WEBHOOK_QUEUE,
        // Read at each failure, so a change (tests shorten it) applies to bodies already queued.
        get retryDelaysMs() {
          return processor.retryDelaysMs;
        },
        handler: (payload, job) => this.handle(payload, job),
        onLastFailure: (payload, job, err) => this.keepFailed(job.id, payload, job.attempt, err),
        // Bodies of statuses go in batches: one transaction (one commit) and a few statements for many.
        concurrency: options.concurrency ?? STATUS_BATCH_CONCURRENCY[isPostgres(db) ? 'postgres' : 'sqlite'],
        batch: { size: STATUS_BATCH, handler: (jobs, complete) => this.applyStatusBatch(jobs, complete) },
      });
    }
  }

  /**
   * Stores one verified webhook body as a job; resolves (with how many tasks it holds) once it is
   * stored, which is when it may be acknowledged.
   */
  async receive(raw: string, payload: unknown): Promise<number> {
    if (!this.jobs) throw new Error('this webhook processor has no job runner');
    const receivedAt = this.clock.now();
    const { tasks, skipped } = tasksOf(payload, receivedAt);
    if (skipped.length > 0) this.logger.warn({ skipped }, 'webhook items skipped: not something Parley can apply');
    if (tasks.length === 0) return 0;
    await this.jobs.enqueue<ProviderWebhookJob>(PROVIDER_WEBHOOK_QUEUE, { raw, receivedAt });
    return tasks.length;
  }

  /** The job: applies a body; throws (to be retried) when a task failed. */
  async handle(payload: ProviderWebhookJob, job: JobInfo): Promise<void> {
    const receivedAt = Number(payload.receivedAt);
    const { tasks } = tasksOf(parse(payload.raw), receivedAt);
    const retrying = job.attempt < job.maxAttempts;
    const result = await this.applyAll(tasks, job.attempt > 1, retrying);
    if (result.failed) throw result.error;
    if (result.unrouted.size > 0) await this.keepUnrouted(job.id, payload, job.attempt, result.unrouted);
  }

  /**
   * Bodies holding statuses alone, applied in one transaction (the same outcome as one by one);
   * resolves with their job IDs. A body with an inbound message is left to run on its own (it has
   * waiters, a transaction of its own and an end user to record). The whole batch is a few
   * statements (`lockMessagesForStatuses`, `applyStatuses`, `raiseStatusesOfMessages`, and the
   * completion of the bodies' jobs, so that they are done in the same commit as their work); on
   * PostgreSQL the messages are locked in the order of their IDs so that two batches touching the
   * same messages wait for each other instead of deadlocking. Anything failing rolls the batch
   * back, and each body then runs on its own. So does a body with a status for a message not found
   * by its provider ID: a pending status must be committed before the message is looked up again
   * (a send reads pending statuses after committing its acceptance), and inside the batch it would
   * not be; a status that brings the ID of a send that never learnt it is adopted on the body's own
   * run.
   */
  async applyStatusBatch(
    jobs: readonly { readonly payload: ProviderWebhookJob; readonly job: JobInfo }[],
    complete?: (db: Kysely<DB>, ids: readonly string[]) => Promise<void>,
  ): Promise<string[]> {
    const bodies: { id: string; tasks: Extract<Task, { kind: 'status' }>[] }[] = [];
    for (const { payload, job } of jobs) {
      const { tasks } = tasksOf(parse(payload.raw), Number(payload.receivedAt));
      const statuses = tasks.filter((t): t is Extract<Task, { kind: 'status' }> => t.kind === 'status');
      if (statuses.length === tasks.length) bodies.push({ id: job.id, tasks: statuses });
    }
    if (bodies.length === 0) return [];
    await this.tidyPending();
    const tasks = bodies
      .flatMap((b) => b.tasks.map((task) => ({ body: b.id, task })))
      .sort((a, b) =>
        a.task.providerMessageId < b.task.providerMessageId
          ? -1
          : a.task.providerMessageId > b.task.providerMessageId
            ? 1
            : 0,
      );
    const onTheirOwn = new Set<string>();
    await this.db.transaction().execute(async (trx) => {
      // The batch's statements, whatever its size (the messages, on PostgreSQL locked in the order
      // of their IDs; the statuses, whose trigger moves the messages; the endpoints and deliveries of the events).
      const messages = await lockMessagesForStatuses(
        trx,
        tasks.map(({ task }) => task),
      );
      const found: { task: (typeof tasks)[number]['task']; message: StatusTargetOfAgent }[] = [];
      for (const [i, { body, task }] of tasks.entries()) {
        const message = messages[i];
        // Not found by the provider's ID (a status that outran its send, or one that brings the
        // ID of a send that never learnt it): left to the body's own run.
        if (message) found.push({ task, message });
        else onTheirOwn.add(body);
      }
      await applyStatuses(
        trx,
        found.map(({ task, message }) => ({ messageId: message.id, event: task.event })),
      );
      if (this.jobs) {
        await raiseStatusesOfMessages(
          { db: trx, jobs: this.jobs, clock: this.clock },
          found.map(({ task, message }) => ({ message, providerMessageId: task.providerMessageId, event: task.event })),
        );
      }
      // The bodies applied are done in the same commit as their statuses.
      await complete?.(
        trx,
        bodies.filter((b) => !onTheirOwn.has(b.id)).map((b) => b.id),
      );
    });
    // The events raised are visible now that the batch committed.
    this.jobs?.wake(EVENT_DELIVERY_QUEUE);
    // Those bodies run again on their own (statuses and events already applied are applied once).
    return bodies.filter((b) => !onTheirOwn.has(b.id)).map((b) => b.id);
  }

  /**
   * Moves bodies left `live` in `webhook_inbox` (by a version that kept its queue in memory) onto
   * the job runner, in one transaction, so that two nodes starting at once cannot both take one.
   */
  async recover(): Promise<number> {
    await this.tidyPending();
    const jobs = this.jobs;
    if (!jobs) return 0;
    const moved = await this.db.transaction().execute(async (trx) => {
      const rows = await trx
        .deleteFrom('webhook_inbox')
        .where('state', '=', 'live')
        .returning(['id', 'body', 'received_at'])
        .execute();
      rows.sort((a, b) => Number(a.received_at) - Number(b.received_at) || a.id.localeCompare(b.id));
      for (const row of rows) {
        if (tasksOf(parse(row.body), Number(row.received_at)).tasks.length === 0) continue;
        await jobs.enqueue<ProviderWebhookJob>(
          PROVIDER_WEBHOOK_QUEUE,
          { raw: row.body, receivedAt: Number(row.received_at) },
          { db: trx },
        );
      }
      return rows.length;
    });
    if (moved > 0) {
      this.logger.info({ bodies: moved }, 'queued provider webhooks left unprocessed by an earlier version');
      jobs.wake(PROVIDER_WEBHOOK_QUEUE);
    }
    return moved;
  }

  /** The bodies kept out of the queue (failed or unrouted), oldest first. */
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
   * Applies stored bodies again, in this process: every failed and unrouted one, or the one with
   * `id`, or the unrouted ones naming `phoneNumberId` (a number was just added). A body is tried
   * `retryDelaysMs.length + 1` times, then kept again; resolves with what became of each.
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
    const results: { id: string; outcome: BodyOutcome }[] = [];
    for (const row of rows) {
      const payload: ProviderWebhookJob = { raw: row.body, receivedAt: Number(row.received_at) };
      const { tasks } = tasksOf(parse(row.body), payload.receivedAt);
      let result: Applied = { unrouted: new Set(), error: undefined, failed: false };
      let attempt = 0;
      for (;;) {
        attempt++;
        const last = attempt > this.retryDelaysMs.length;
        result = await this.applyAll(tasks, true, !last);
        if (!result.failed || last) break;
        await new Promise((r) => setTimeout(r, this.retryDelaysMs[attempt - 1]));
      }
      const attempts = Number(row.attempts) + attempt;
      let outcome: BodyOutcome = 'applied';
      if (result.failed) {
        outcome = 'failed';
        await this.db
          .updateTable('webhook_inbox')
          .set({
            state: 'failed',
            attempts,
            last_error: errorText(result.error),
            failed_at: this.clock.now(),
            phone_number_ids: null,
          })
          .where('id', '=', row.id)
          .execute();
      } else if (result.unrouted.size > 0) {
        outcome = 'unrouted';
        await this.db
          .updateTable('webhook_inbox')
          .set({ attempts, ...unroutedColumns(result.unrouted), failed_at: this.clock.now() })
          .where('id', '=', row.id)
          .execute();
      } else {
        await this.db.deleteFrom('webhook_inbox').where('id', '=', row.id).execute();
      }
      results.push({ id: row.id, outcome });
    }
    return results;
  }

  /**
   * Resolves once the inbound message `providerMessageId` has been applied (here, or by another
   * node: the database is looked at too), or could not be (its first attempt failed, or its number
   * is unknown), or after `timeoutMs`. Register before the webhook can arrive.
   */
  waitForInbound(providerMessageId: string, timeoutMs: number): Promise<InboundOutcome> {
    return new Promise((resolve) => {
      let settled = false;
      const finish = (outcome: InboundOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearInterval(poll);
        this.inboundWaiters.delete(providerMessageId);
        resolve(outcome);
      };
      const timer = setTimeout(() => finish({ ok: false, reason: 'timeout', retrying: false }), timeoutMs);
      const poll = setInterval(() => {
        this.db
          .selectFrom('inbound_messages')
          .select('provider_message_id')
          .where('provider_message_id', '=', providerMessageId)
          .executeTakeFirst()
          .then((row) => row && finish({ ok: true }))
          .catch(() => undefined);
      }, INBOUND_POLL_MS);
      this.inboundWaiters.set(providerMessageId, finish);
    });
  }

  /** Resolves once no provider webhook is queued, running or waiting for a retry. */
  async idle(): Promise<void> {
    await this.jobs?.drained([PROVIDER_WEBHOOK_QUEUE]);
  }

  /** Nothing of its own to stop: the jobs belong to the runner, which stops with the context. */
  async close(): Promise<void> {}

  /** Applies every task of a body, each on its own; tells whoever waits for an inbound message. */
  private async applyAll(tasks: readonly Task[], again: boolean, retrying: boolean): Promise<Applied> {
    const unrouted = new Set<string>();
    let error: unknown;
    let failed = false;
    for (const task of tasks) {
      try {
        const outcome: TaskOutcome =
          task.kind === 'status' ? await this.applyStatusTask(task) : await this.applyInbound(task, again);
        if (outcome === 'unrouted') unrouted.add(task.phoneNumberId ?? '');
        if (task.kind === 'inbound') {
          this.notifyInbound(
            task.providerMessageId,
            outcome === 'applied' ? { ok: true } : { ok: false, reason: 'unknown number', retrying: false },
          );
        }
      } catch (err) {
        if (!failed) error = err;
        failed = true;
        this.logger.warn({ err, kind: task.kind, retrying }, 'webhook task failed');
        if (task.kind === 'inbound')
          this.notifyInbound(task.providerMessageId, { ok: false, reason: 'failed', retrying });
      }
    }
    return { unrouted, error, failed };
  }

  /** A body whose last attempt failed, kept for an operator (idempotent: the job's ID is the row's). */
  private async keepFailed(id: string, payload: ProviderWebhookJob, attempts: number, err: unknown): Promise<void> {
    const now = this.clock.now();
    await this.db
      .insertInto('webhook_inbox')
      .values({
        id,
        body: payload.raw,
        received_at: Number(payload.receivedAt),
        state: 'failed',
        attempts,
        last_error: errorText(err),
        failed_at: now,
        phone_number_ids: null,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    this.logger.error(
      { inboxId: id, attempts, error: errorText(err) },
      'webhook body failed after its retries; kept as a failed webhook (parley webhooks failed / retry)',
    );
  }

  private async keepUnrouted(
    id: string,
    payload: ProviderWebhookJob,
    attempts: number,
    unrouted: ReadonlySet<string>,
  ): Promise<void> {
    await this.db
      .insertInto('webhook_inbox')
      .values({
        id,
        body: payload.raw,
        received_at: Number(payload.receivedAt),
        attempts,
        failed_at: this.clock.now(),
        ...unroutedColumns(unrouted),
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    this.logger.warn(
      { inboxId: id, phoneNumberIds: [...unrouted] },
      'inbound message for an unknown number kept as an unrouted webhook; adding the number replays it',
    );
  }

  private notifyInbound(providerMessageId: string, outcome: InboundOutcome): void {
    this.inboundWaiters.get(providerMessageId)?.(outcome);
  }

  /**
   * At most every 10 minutes (and at start-up): deletes pending statuses past the provider's retry
   * horizon, and applies those whose message has its provider ID by now. A send applies them just
   * after its answer; this finds those of a send whose process stopped before it could.
   */
  private async tidyPending(): Promise<void> {
    const now = this.clock.now();
    if (now - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = now;
    try {
      const purged = await purgePendingStatuses(this.db, now - PENDING_STATUS_TTL_MS);
      if (purged > 0) this.logger.info({ purged }, 'deleted statuses of unknown messages older than 7 days');
    } catch (err) {
      this.logger.error({ err }, 'could not delete expired pending statuses');
    }
    try {
      let applied = 0;
      // Each round deletes what it applied; bounded all the same, the rest waits for the next time.
      for (let round = 0; round < 100; round++) {
        const found = await messagesWithPendingStatuses(this.db, PENDING_BATCH);
        for (const { id, providerMessageId, phoneNumberId } of found) {
          const statuses = await applyPendingStatuses(this.db, id, providerMessageId, phoneNumberId);
          await this.raiseStatuses(this.db, id, providerMessageId, statuses);
          applied += statuses.length;
        }
        if (found.length < PENDING_BATCH) break;
      }
      if (applied > 0)
        this.logger.info({ applied }, 'applied statuses kept for messages that have their provider ID by now');
    } catch (err) {
      this.logger.error({ err }, 'could not apply the pending statuses of known messages');
    }
  }

  /** Applies one status (a body's own run; a batch applies its statuses together, see applyStatusBatch). */
  private async applyStatusTask(task: Extract<Task, { kind: 'status' }>): Promise<TaskOutcome> {
    await this.tidyPending();
    const db = this.db;
    const { providerMessageId, phoneNumberId } = task;
    const found = await findMessageForStatus(db, providerMessageId, task.callbackData, phoneNumberId);
    if (found) {
      if (found.providerMessageId === null) {
        // The send never learnt this ID (it timed out, say): the status proves the provider took it.
        await adoptProviderMessageId(db, found.id, providerMessageId, task.event.receivedAt);
        await applyStatus(db, found.id, task.event);
        const earlier = await applyPendingStatuses(db, found.id, providerMessageId, phoneNumberId);
        await this.raiseStatuses(db, found.id, providerMessageId, [task.event, ...earlier]);
      } else {
        await applyStatus(db, found.id, task.event);
        await this.raiseStatuses(db, found.id, providerMessageId, [task.event]);
      }
      return 'applied';
    }
    await storePendingStatus(db, providerMessageId, task.event, phoneNumberId);
    // The send may have stored its provider ID between our lookup and the insert above.
    const late = await findMessageForStatus(db, providerMessageId, undefined, phoneNumberId);
    if (late) {
      const applied = await applyPendingStatuses(db, late.id, providerMessageId, phoneNumberId);
      await this.raiseStatuses(db, late.id, providerMessageId, applied);
    }
    return 'applied';
  }

  /** `message.status` for each status applied to one of an agent's messages. */
  private async raiseStatuses(
    db: Kysely<DB>,
    id: string,
    providerMessageId: string,
    statuses: readonly StatusEvent[],
  ): Promise<void> {
    if (!this.jobs) return;
    await raiseMessageStatuses({ db, jobs: this.jobs, clock: this.clock }, id, providerMessageId, statuses);
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
          type: task.type,
          sent_at: task.sentAt,
          received_at: this.clock.now(),
          conversation_id: null,
        })
        .onConflict((oc) => oc.column('provider_message_id').doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return false; // a redelivery
      await openWindow(trx, number.id, windowKey(task.from), task.sentAt);
      return true;
    });
    const joined = stored
      ? null
      : ((
          await this.db
            .selectFrom('inbound_messages')
            .select('conversation_id')
            .where('provider_message_id', '=', task.providerMessageId)
            .executeTakeFirst()
        )?.conversation_id ?? null);
    // A redelivery of a message fully handled before is left alone; an attempt after a failure or a
    // crash (the message stored, its conversation not yet set) finishes the work.
    if (!stored && !again && joined !== null) return 'applied';
    const endUserId = await this.recordEndUser(number.org_id, task);
    if (endUserId && this.jobs) {
      const endUser = await findEndUserById(this.db, number.org_id, endUserId);
      await joinInbound(
        { db: this.db, jobs: this.jobs, clock: this.clock, idleMs: this.conversationIdleMs },
        {
          orgId: number.org_id,
          numberId: number.id,
          providerMessageId: task.providerMessageId,
          from: task.from,
          endUser: {
            id: endUserId,
            name: endUser?.name ?? null,
            phone: endUser?.phone ?? null,
            email: endUser?.email ?? null,
          },
          type: task.type,
          text: task.text,
          sentAt: task.sentAt,
          conversationId: joined,
        },
      );
    }
    return 'applied';
  }

  /** Records the sender as an end user; resolves with its ID, or undefined when it has no usable phone. */
  private async recordEndUser(orgId: string, task: Extract<Task, { kind: 'inbound' }>): Promise<string | undefined> {
    const phone = endUserPhoneOf(task.from);
    const skip = () =>
      this.logger.warn(
        { from: task.from, providerMessageId: task.providerMessageId },
        'inbound sender has no phone number the end-user records accept; message stored and window opened, no end user recorded',
      );
    if (!phone) {
      skip();
      return undefined;
    }
    try {
      const { id } = await recordInboundEndUser(this.db, this.clock, {
        orgId,
        phone,
        ...(task.name ? { name: task.name } : {}),
        at: task.sentAt,
      });
      return id;
    } catch (err) {
      if (isAppError(err) && err.code === 'INVALID_BODY') {
        skip();
        return undefined;
      }
      throw err;
    }
  }
}

function unroutedColumns(ids: ReadonlySet<string>) {
  const list = [...ids];
  return {
    state: 'unrouted' as const,
    last_error: `unknown number: no messaging number has phone number ID ${list.map((id) => `'${id}'`).join(', ')}`,
    phone_number_ids: `,${list.join(',')},`,
  };
}

function parse(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
