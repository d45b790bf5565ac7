import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { raiseMessageStatuses, raiseStatusesOfMessages } from '../conversations/index.js';
import type { DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import type { Clock } from '../shared/clock.js';
import { PENDING_STATUS_TTL_MS, type StatusEvent } from './message.model.js';
import { applyStatus, applyStatuses, lockMessagesForStatuses, type StatusTargetOfAgent } from './status.fast.js';
import {
  adoptProviderMessageId,
  applyPendingStatuses,
  findMessageForStatus,
  messagesWithPendingStatuses,
  purgePendingStatuses,
  storePendingStatus,
} from './status.repository.js';
import type { StatusTask } from './webhook-payload.js';

/**
 * How often a process tidies pending statuses: deletes the expired ones, applies those whose message
 * is known by now (as statuses come in, so no timer to stop).
 */
const PURGE_EVERY_MS = 10 * 60 * 1000;
/** Messages with pending statuses handled per read when tidying them. */
const PENDING_BATCH = 100;

export interface StatusDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Raises `message.status` events; without it (a CLI replay) none are raised. */
  readonly jobs: JobRunner | undefined;
}

/** The statuses of one body, for a batch. */
export interface StatusBody {
  readonly id: string;
  readonly tasks: readonly StatusTask[];
}

/**
 * Applies delivery statuses to messages: one at a time (a body's own run), or the statuses of many
 * bodies together (a batch). A status for a message not known yet is kept pending until its send
 * stores its provider ID; pending statuses are tidied as statuses come in.
 */
export class StatusApplier {
  private lastPurge = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: StatusDeps) {}

  /** Applies one status (a body's own run; a batch applies its statuses together, see applyBatch). */
  async applyOne(task: StatusTask): Promise<'applied'> {
    await this.tidyPending();
    const { db } = this.deps;
    const { providerMessageId, phoneNumberId } = task;
    const found = await findMessageForStatus(db, providerMessageId, task.callbackData, phoneNumberId);
    if (found) {
      if (found.providerMessageId === null) {
        // The send never learnt this ID (it timed out, say): the status proves the provider took it.
        await adoptProviderMessageId(db, found.id, providerMessageId, task.event.receivedAt);
        await applyStatus(db, found.id, task.event);
        const earlier = await applyPendingStatuses(db, found.id, providerMessageId, phoneNumberId);
        await this.raise(db, found.id, providerMessageId, [task.event, ...earlier]);
      } else {
        await applyStatus(db, found.id, task.event);
        await this.raise(db, found.id, providerMessageId, [task.event]);
      }
      return 'applied';
    }
    await storePendingStatus(db, providerMessageId, task.event, phoneNumberId);
    // The send may have stored its provider ID between our lookup and the insert above.
    const late = await findMessageForStatus(db, providerMessageId, undefined, phoneNumberId);
    if (late) {
      const applied = await applyPendingStatuses(db, late.id, providerMessageId, phoneNumberId);
      await this.raise(db, late.id, providerMessageId, applied);
    }
    return 'applied';
  }

  /**
   * The statuses of many bodies in one transaction (the same outcome as one by one); resolves with
   * the IDs of the bodies applied. The whole batch is a few statements (`lockMessagesForStatuses`,
   * `applyStatuses`, `raiseStatusesOfMessages`, and `complete`, so that the bodies' jobs are done in
   * the same commit as their work); on PostgreSQL the messages are locked in the order of their IDs
   * so that two batches touching the same messages wait for each other instead of deadlocking.
   * Anything failing rolls the batch back (the caller then runs each body on its own). So does a
   * body with a status for a message not found by its provider ID: a pending status must be
   * committed before the message is looked up again (a send reads pending statuses after
   * committing its acceptance), and inside the batch it would not be; a status that brings the ID
   * of a send that never learnt it is adopted on the body's own run.
   */
  async applyBatch(
    bodies: readonly StatusBody[],
    complete?: (db: Kysely<DB>, ids: readonly string[]) => Promise<void>,
  ): Promise<string[]> {
    if (bodies.length === 0) return [];
    await this.tidyPending();
    const { db, jobs, clock } = this.deps;
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
    await db.transaction().execute(async (trx) => {
      // The batch's statements, whatever its size (the messages, on PostgreSQL locked in the order
      // of their IDs; the statuses, whose trigger moves the messages; the endpoints and deliveries of the events).
      const messages = await lockMessagesForStatuses(
        trx,
        tasks.map(({ task }) => task),
      );
      const found: { task: StatusTask; message: StatusTargetOfAgent }[] = [];
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
      if (jobs) {
        await raiseStatusesOfMessages(
          { db: trx, jobs, clock },
          found.map(({ task, message }) => ({ message, providerMessageId: task.providerMessageId, event: task.event })),
        );
      }
      // The bodies applied are done in the same commit as their statuses.
      await complete?.(
        trx,
        bodies.filter((b) => !onTheirOwn.has(b.id)).map((b) => b.id),
      );
    });
    // Those bodies run again on their own (statuses and events already applied are applied once).
    return bodies.filter((b) => !onTheirOwn.has(b.id)).map((b) => b.id);
  }

  /**
   * At most every 10 minutes (and at start-up): deletes pending statuses past the provider's retry
   * horizon, and applies those whose message has its provider ID by now. A send applies them just
   * after its answer; this finds those of a send whose process stopped before it could.
   */
  async tidyPending(): Promise<void> {
    const { db, clock, logger } = this.deps;
    const now = clock.now();
    if (now - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = now;
    try {
      const purged = await purgePendingStatuses(db, now - PENDING_STATUS_TTL_MS);
      if (purged > 0) logger.info({ purged }, 'deleted statuses of unknown messages older than 7 days');
    } catch (err) {
      logger.error({ err }, 'could not delete expired pending statuses');
    }
    try {
      let applied = 0;
      // Each round deletes what it applied; bounded all the same, the rest waits for the next time.
      for (let round = 0; round < 100; round++) {
        const found = await messagesWithPendingStatuses(db, PENDING_BATCH);
        for (const { id, providerMessageId, phoneNumberId } of found) {
          const statuses = await applyPendingStatuses(db, id, providerMessageId, phoneNumberId);
          await this.raise(db, id, providerMessageId, statuses);
          applied += statuses.length;
        }
        if (found.length < PENDING_BATCH) break;
      }
      if (applied > 0)
        logger.info({ applied }, 'applied statuses kept for messages that have their provider ID by now');
    } catch (err) {
      logger.error({ err }, 'could not apply the pending statuses of known messages');
    }
  }

  /** `message.status` for each status applied to one of an agent's messages. */
  private async raise(
    db: Kysely<DB>,
    id: string,
    providerMessageId: string,
    statuses: readonly StatusEvent[],
  ): Promise<void> {
    const { jobs, clock } = this.deps;
    if (!jobs) return;
    await raiseMessageStatuses({ db, jobs, clock }, id, providerMessageId, statuses);
  }
}
