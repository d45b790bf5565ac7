import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import { recordInboundEndUser } from '../end-users/end-user.service.js';
import { toE164 } from '../numbers/number.service.js';
import type { Clock } from '../shared/clock.js';
import { newId } from '../shared/ids.js';
import {
  applyPendingStatuses,
  applyStatus,
  findMessageIdForStatus,
  openWindow,
  PROVIDER_STATUSES,
  type ProviderStatus,
  type StatusEvent,
  storePendingStatus,
} from './message.repository.js';

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
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

type Task =
  | {
      kind: 'status';
      phoneNumberId: string;
      providerMessageId: string;
      callbackData: string | undefined;
      event: StatusEvent;
    }
  | {
      kind: 'inbound';
      phoneNumberId: string;
      providerMessageId: string;
      from: string;
      name: string | undefined;
      text: string | null;
      sentAt: number;
    };

/** Splits a webhook into one task per message and status, across every entry and change. */
export function tasksOf(payload: unknown, receivedAt: number): Task[] {
  const tasks: Task[] = [];
  if (!isObject(payload)) return tasks;
  for (const entry of list(payload.entry)) {
    for (const change of list(entry.changes)) {
      const value = isObject(change.value) ? change.value : undefined;
      if (!value) continue;
      const phoneNumberId = str(isObject(value.metadata) ? value.metadata.phone_number_id : undefined) ?? '';
      const timeOf = (ts: unknown) => {
        const seconds = Number(ts);
        return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : receivedAt;
      };
      const names = new Map<string, string>();
      for (const contact of list(value.contacts)) {
        const waId = str(contact.wa_id);
        const name = str(isObject(contact.profile) ? contact.profile.name : undefined);
        if (waId && name) names.set(waId, name);
      }
      for (const m of list(value.messages)) {
        const id = str(m.id);
        const from = str(m.from);
        if (!id || !from) continue;
        tasks.push({
          kind: 'inbound',
          phoneNumberId,
          providerMessageId: id,
          from,
          name: names.get(from),
          text: str(isObject(m.text) ? m.text.body : undefined) ?? null,
          sentAt: Math.min(timeOf(m.timestamp), receivedAt),
        });
      }
      for (const s of list(value.statuses)) {
        const id = str(s.id);
        const status = str(s.status);
        if (!id || !status || !(PROVIDER_STATUSES as readonly string[]).includes(status)) continue;
        const error = list(s.errors)[0];
        const details = error && isObject(error.error_data) ? str(error.error_data.details) : undefined;
        tasks.push({
          kind: 'status',
          phoneNumberId,
          providerMessageId: id,
          callbackData: str(s.biz_opaque_callback_data),
          event: {
            status: status as ProviderStatus,
            occurredAt: timeOf(s.timestamp),
            receivedAt,
            errorCode: error && typeof error.code === 'number' ? error.code : null,
            errorMessage: error ? (details ?? str(error.message) ?? str(error.title) ?? null) : null,
          },
        });
      }
    }
  }
  return tasks;
}

const insertInbox = precompiled((db) =>
  db.insertInto('webhook_inbox').values({ id: slot(0), body: slot(1), received_at: slot(2) }),
);
const deleteInbox = precompiled((db) => db.deleteFrom('webhook_inbox').where('id', '=', slot<string>(0)));

interface Queued {
  readonly task: Task;
  readonly inboxId: string;
}

/**
 * A webhook body is written to the inbox table, acknowledged, then processed a few tasks at a
 * time; once all of its tasks are applied its inbox row is deleted. A body whose processing was
 * cut short (the process stopped, or a task failed) stays in the inbox and is replayed by
 * `recover()` at the next start, so nothing the provider saw acknowledged is lost. Every step is
 * idempotent (dedupe on inbound message ID and on (message, status); statuses only move forward),
 * so concurrency, replays and the provider's redeliveries are harmless. `idle()` lets tests and
 * shutdown wait for the queue to drain.
 */
export class WebhookProcessor {
  private readonly queue: Queued[] = [];
  /** Per inbox row: tasks not yet finished, and whether one failed. */
  private readonly bodies = new Map<string, { left: number; failed: boolean }>();
  private running = 0;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly concurrency = 8,
  ) {}

  /**
   * Stores one verified webhook body and queues its work; resolves (with how many tasks it holds)
   * once the body is stored, which is when it may be acknowledged.
   */
  async receive(raw: string, payload: unknown): Promise<number> {
    const receivedAt = this.clock.now();
    const tasks = tasksOf(payload, receivedAt);
    if (tasks.length === 0) return 0;
    const inboxId = newId('evt');
    await insertInbox(this.db, [inboxId, raw, receivedAt]);
    this.enqueue(inboxId, tasks);
    return tasks.length;
  }

  /** Queues again the bodies left in the inbox by an earlier run; returns how many there were. */
  async recover(): Promise<number> {
    const rows = await this.db.selectFrom('webhook_inbox').selectAll().orderBy('received_at').orderBy('id').execute();
    for (const row of rows) {
      let payload: unknown;
      try {
        payload = JSON.parse(row.body);
      } catch {
        payload = undefined;
      }
      const tasks = tasksOf(payload, row.received_at);
      if (tasks.length === 0) await deleteInbox(this.db, [row.id]);
      else this.enqueue(row.id, tasks);
    }
    if (rows.length > 0) this.logger.info({ bodies: rows.length }, 'replaying unprocessed provider webhooks');
    return rows.length;
  }

  idle(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private enqueue(inboxId: string, tasks: readonly Task[]): void {
    this.bodies.set(inboxId, { left: tasks.length, failed: false });
    for (const task of tasks) this.queue.push({ task, inboxId });
    this.pump();
  }

  private pump(): void {
    while (this.running < this.concurrency && this.queue.length > 0) {
      const next = this.queue.shift();
      if (!next) break;
      this.running++;
      this.run(next.task)
        .then(
          () => this.settle(next.inboxId, true),
          (err: unknown) => {
            this.logger.error({ err, kind: next.task.kind }, 'webhook task failed; its body stays in the inbox');
            return this.settle(next.inboxId, false);
          },
        )
        .catch((err: unknown) => this.logger.error({ err }, 'could not clear a processed webhook from the inbox'))
        .finally(() => {
          this.running--;
          this.pump();
          if (this.running === 0 && this.queue.length === 0) {
            const waiters = this.waiters;
            this.waiters = [];
            for (const resolve of waiters) resolve();
          }
        });
    }
  }

  /** Counts a finished task; the last one of a body that fully succeeded deletes its inbox row. */
  private async settle(inboxId: string, ok: boolean): Promise<void> {
    const body = this.bodies.get(inboxId);
    if (!body) return;
    body.left--;
    if (!ok) body.failed = true;
    if (body.left > 0) return;
    this.bodies.delete(inboxId);
    if (!body.failed) await deleteInbox(this.db, [inboxId]);
  }

  private async run(task: Task): Promise<void> {
    if (task.kind === 'status') return this.applyStatusTask(task);
    return this.applyInbound(task);
  }

  private async applyStatusTask(task: Extract<Task, { kind: 'status' }>): Promise<void> {
    const messageId = await findMessageIdForStatus(this.db, task.providerMessageId, task.callbackData);
    if (messageId) return applyStatus(this.db, messageId, task.event);
    await storePendingStatus(this.db, task.providerMessageId, task.event);
    // The send may have stored its provider ID between our lookup and the insert above.
    const late = await findMessageIdForStatus(this.db, task.providerMessageId, undefined);
    if (late) await applyPendingStatuses(this.db, late, task.providerMessageId);
  }

  private async applyInbound(task: Extract<Task, { kind: 'inbound' }>): Promise<void> {
    const number = await this.db
      .selectFrom('messaging_numbers')
      .select(['id', 'org_id'])
      .where('phone_number_id', '=', task.phoneNumberId)
      .executeTakeFirst();
    if (!number) {
      this.logger.warn({ phoneNumberId: task.phoneNumberId }, 'inbound message for an unknown number ignored');
      return;
    }
    const phone = toE164(`+${task.from}`) ?? `+${task.from.replace(/\D/g, '')}`;
    await this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('inbound_messages')
        .values({
          provider_message_id: task.providerMessageId,
          org_id: number.org_id,
          number_id: number.id,
          from_phone: phone,
          text: task.text,
          sent_at: task.sentAt,
          received_at: this.clock.now(),
        })
        .onConflict((oc) => oc.column('provider_message_id').doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return; // a redelivery
      await recordInboundEndUser(trx, this.clock, {
        orgId: number.org_id,
        phone,
        ...(task.name ? { name: task.name } : {}),
        at: task.sentAt,
      });
      await openWindow(trx, number.id, phone, task.sentAt);
    });
  }
}
