/**
 * What a send records once the provider has answered: the failure and the undo of what the send
 * made, or the acceptance, `conversation.started`, and the statuses that outran the message.
 * Bookkeeping that fails here is never the caller's answer: it is tried again while the process
 * lives, else logged (the stored message and its callback data still let later statuses find it).
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { ConversationTable } from '../conversations/conversation.tables.js';
import { deleteUnstartedConversation, emitConversationStarted, raiseMessageStatuses } from '../conversations/index.js';
import { laterWritesOf } from '../db/later-writes.js';
import type { DB } from '../db/schema.js';
import { deleteEndUserMadeForSend } from '../end-users/index.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { publishLive } from '../live/index.js';
import { applyPendingStatuses, markSendFailed } from '../messaging/index.js';
import type { AfterAnswer } from '../shared/after-answer.js';
import type { Clock } from '../shared/clock.js';
import { recordAcceptance } from './send.fast.js';
import type { SendFailure } from './send-outcome.js';

export interface AfterSendDeps {
  readonly db: Kysely<DB>;
  readonly jobs: JobRunner;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** The message of one send, as the provider answered it. */
export interface Answered {
  /** Our message ID. */
  readonly id: string;
  readonly providerMessageId: string | undefined;
  readonly phoneNumberId: string;
  readonly at: number;
}

/** The conversation a send joined or opened (`created`: opened by it). */
export interface Opened {
  readonly row: ConversationTable;
  readonly created: boolean;
}

/** The end user a send went to (`created`: made for it). */
export interface SentTo {
  readonly id: string;
  readonly name: string | null;
  readonly phone: string | null;
  readonly email: string | null;
  readonly created: boolean;
}

/**
 * How long a process keeps trying to record what the provider answered, when a passing fault (a
 * lost connection, a restart, a full disk) refuses the write: the provider's ID is what its status
 * webhooks are matched by, and without the acceptance the message stays pending.
 */
const RECORD_FOR_MS = 60 * 60 * 1000;

/**
 * Runs a write; one a passing fault refuses is tried again, at once and then in the background
 * (later-writes.ts), and one that fails for good is logged: the provider has answered, so the
 * caller's answer stands whatever happens here. True when it was written now. Each write is safe
 * to repeat (an update to a known state, a delete by ID; an event keeps its ID).
 */
function recorder(deps: AfterSendDeps, sent: Answered) {
  const later = laterWritesOf(deps);
  return (what: string, write: () => Promise<unknown>): Promise<boolean> =>
    later.run(`recording ${what} of a send the provider answered`, write, {
      until: deps.clock.now() + RECORD_FOR_MS,
      context: { messageId: sent.id, providerMessageId: sent.providerMessageId },
    });
}

/**
 * A send that did not go through: the failure recorded and, when nothing went out for certain,
 * what the send made for its recipient undone (an unknown outcome keeps it). Whether the
 * conversation and end user were kept.
 */
export async function recordSendFailed(
  deps: AfterSendDeps,
  sent: Answered,
  failure: SendFailure,
  sentence: string,
  made: { readonly orgId: string; readonly opened: Opened | undefined; readonly endUser: SentTo | undefined },
): Promise<{ keptConversation: boolean; keptEndUser: boolean }> {
  const record = recorder(deps, sent);
  const { opened, endUser } = made;
  const certain = failure.kind !== 'unknown';
  await record('the failure', () =>
    markSendFailed(
      deps.db,
      sent.id,
      failure.kind === 'rejected' || failure.kind === 'throttled' ? 'rejected' : 'unconfirmed',
      failure.code,
      sentence,
      sent.at,
    ),
  );
  if (certain && opened?.created) await record('the undo', () => deleteUnstartedConversation(deps.db, opened.row.id));
  if (certain && endUser?.created && opened?.created) {
    await record('the undo', () => deleteEndUserMadeForSend(deps.db, made.orgId, endUser.id));
  }
  if (opened && !(certain && opened.created)) {
    await record('the live update', () =>
      publishLive(deps.db, { orgId: opened.row.org_id, conversationIds: [opened.row.id], kind: 'message' }),
    );
  }
  const kept = !certain || !opened?.created;
  return { keptConversation: kept, keptEndUser: kept || !endUser?.created };
}

/**
 * A send the provider accepted: the acceptance (and the conversation moved on to `now`), then
 * `conversation.started` for a conversation it opened. The statuses that outran the message (a
 * webhook without our callback data, stored as pending before the message had its provider ID)
 * are read only once the acceptance is committed, as a status webhook stores one and then looks
 * for the message again; told after conversation.started. Nothing in the answer depends on them,
 * so an API request (`afterAnswer`) answers first; otherwise the send waits for them.
 */
export async function recordSendAccepted(
  deps: AfterSendDeps,
  sent: Answered & { readonly providerMessageId: string },
  made: { readonly now: number; readonly opened: Opened | undefined; readonly endUser: SentTo | undefined },
  afterAnswer: AfterAnswer | undefined,
): Promise<void> {
  const record = recorder(deps, sent);
  const { opened, endUser } = made;
  const events = { db: deps.db, jobs: deps.jobs, clock: deps.clock };
  const accepted = await record('the acceptance', async () => {
    await recordAcceptance(deps.db, {
      id: sent.id,
      providerMessageId: sent.providerMessageId,
      at: sent.at,
      conversation: opened ? { id: opened.row.id, now: made.now } : null,
    });
    if (opened) {
      await publishLive(deps.db, { orgId: opened.row.org_id, conversationIds: [opened.row.id], kind: 'message' });
    }
    if (opened?.created && endUser) {
      await emitConversationStarted(events, opened.row, {
        endUser: { id: endUser.id, name: endUser.name, phone: endUser.phone, email: endUser.email },
        messageId: sent.providerMessageId,
        at: sent.at,
      });
    }
  });
  if (!accepted) return;
  const outran = async () => {
    const applied = await applyPendingStatuses(deps.db, sent.id, sent.providerMessageId, sent.phoneNumberId);
    await raiseMessageStatuses(events, sent.id, sent.providerMessageId, applied);
  };
  if (afterAnswer) {
    afterAnswer.run('applying the statuses that outran a send', outran, {
      messageId: sent.id,
      providerMessageId: sent.providerMessageId,
    });
  } else {
    await record('the statuses that outran it', outran);
  }
}
