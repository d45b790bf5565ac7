import { type Kysely, sql } from 'kysely';
import { isUniqueViolation } from '../db/db-errors.js';
import type { DB } from '../db/schema.js';
import { type ProviderStatus, STATUS_RANK, type StatusEvent } from './message.model.js';
import { applyStatus, messageByProviderId, messageByProviderIdOfNumber, pendingOf } from './status.fast.js';

/** SQL of delivery statuses (their hot statements are in status.fast.ts); nothing else. */

export interface StatusTarget {
  readonly id: string;
  /** Null when the send never learnt it (the provider's answer was lost): the status brings it. */
  readonly providerMessageId: string | null;
}

/**
 * The message a status webhook is about: by provider ID, else by our ID sent as callback data;
 * when the webhook names its number (`metadata.phone_number_id`), only a message of that number.
 */
export async function findMessageForStatus(
  db: Kysely<DB>,
  providerMessageId: string,
  callbackData: string | undefined,
  phoneNumberId: string | undefined,
): Promise<StatusTarget | undefined> {
  const byProvider = (
    phoneNumberId
      ? await messageByProviderIdOfNumber(db, [providerMessageId, phoneNumberId])
      : await messageByProviderId(db, [providerMessageId])
  ).rows[0];
  if (byProvider) return { id: byProvider.id, providerMessageId: byProvider.provider_message_id };
  if (!callbackData?.startsWith('msg_')) return undefined;
  let query = db
    .selectFrom('messages')
    .innerJoin('messaging_numbers', 'messaging_numbers.id', 'messages.number_id')
    .select(['messages.id', 'messages.provider_message_id'])
    .where('messages.id', '=', callbackData);
  if (phoneNumberId) query = query.where('messaging_numbers.phone_number_id', '=', phoneNumberId);
  const byCallback = await query.executeTakeFirst();
  if (!byCallback) return undefined;
  // Callback data of another message of ours must not attach statuses to it.
  if (byCallback.provider_message_id !== null && byCallback.provider_message_id !== providerMessageId) return undefined;
  return { id: byCallback.id, providerMessageId: byCallback.provider_message_id };
}

/**
 * A status carrying our callback data proves the provider accepted a message whose send never
 * learnt its ID (a timeout, a lost answer): records the ID, so GET /api/messages/<wamid> finds it,
 * and clears the "unconfirmed" error of that send. Returns false when another message already has
 * that ID (then nothing changes).
 */
export async function adoptProviderMessageId(
  db: Kysely<DB>,
  messageId: string,
  providerMessageId: string,
  at: number,
): Promise<boolean> {
  try {
    await db
      .updateTable('messages')
      .set({
        provider_message_id: providerMessageId,
        status: sql<string>`case when status = 'unconfirmed' then 'accepted' else status end`,
        status_rank: sql<number>`case when status = 'unconfirmed' then ${STATUS_RANK.accepted} else status_rank end`,
        error_code: sql<number | null>`case when status = 'unconfirmed' then null else error_code end`,
        error_message: sql<string | null>`case when status = 'unconfirmed' then null else error_message end`,
        updated_at: at,
      })
      .where('id', '=', messageId)
      .where('provider_message_id', 'is', null)
      .execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

export async function storePendingStatus(
  db: Kysely<DB>,
  providerMessageId: string,
  event: StatusEvent,
  phoneNumberId: string | undefined,
): Promise<void> {
  await db
    .insertInto('pending_statuses')
    .values({
      provider_message_id: providerMessageId,
      phone_number_id: phoneNumberId ?? null,
      status: event.status,
      occurred_at: event.occurredAt,
      received_at: event.receivedAt,
      error_code: event.errorCode,
      error_message: event.errorMessage,
    })
    .onConflict((oc) => oc.columns(['provider_message_id', 'status']).doNothing())
    .execute();
}

/**
 * Applies statuses that arrived before the message was stored (those reported for the message's
 * own number, or for no number in particular); returns them, in the order applied.
 */
export async function applyPendingStatuses(
  db: Kysely<DB>,
  messageId: string,
  providerMessageId: string,
  phoneNumberId: string | undefined,
): Promise<StatusEvent[]> {
  const pending = (await pendingOf(db, providerMessageId)).filter(
    (p) => p.phone_number_id === null || phoneNumberId === undefined || p.phone_number_id === phoneNumberId,
  );
  if (pending.length === 0) return [];
  const applied: StatusEvent[] = [];
  for (const p of pending.sort(
    (a, b) => STATUS_RANK[a.status as ProviderStatus] - STATUS_RANK[b.status as ProviderStatus],
  )) {
    const event: StatusEvent = {
      status: p.status as ProviderStatus,
      occurredAt: Number(p.occurred_at),
      receivedAt: Number(p.received_at),
      errorCode: p.error_code,
      errorMessage: p.error_message,
    };
    await applyStatus(db, messageId, event);
    applied.push(event);
  }
  await db
    .deleteFrom('pending_statuses')
    .where('provider_message_id', '=', providerMessageId)
    .where(
      'status',
      'in',
      pending.map((p) => p.status),
    )
    .execute();
  return applied;
}

/** Deletes pending statuses received before `cutoff`; returns how many. */
export async function purgePendingStatuses(db: Kysely<DB>, cutoff: number): Promise<number> {
  const result = await db.deleteFrom('pending_statuses').where('received_at', '<', cutoff).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Messages that now have the provider ID of a pending status reported for their number (or for
 * none): statuses a send would have applied just after its answer, had its process not stopped
 * first. At most `limit`, each once, with its number's provider ID.
 */
export async function messagesWithPendingStatuses(
  db: Kysely<DB>,
  limit: number,
): Promise<{ id: string; providerMessageId: string; phoneNumberId: string }[]> {
  const rows = await db
    .selectFrom('pending_statuses')
    .innerJoin('messages', 'messages.provider_message_id', 'pending_statuses.provider_message_id')
    .innerJoin('messaging_numbers', 'messaging_numbers.id', 'messages.number_id')
    .where((eb) =>
      eb.or([
        eb('pending_statuses.phone_number_id', 'is', null),
        eb('pending_statuses.phone_number_id', '=', eb.ref('messaging_numbers.phone_number_id')),
      ]),
    )
    .select(['messages.id', 'messages.provider_message_id', 'messaging_numbers.phone_number_id'])
    .distinct()
    .orderBy('messages.id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    providerMessageId: r.provider_message_id as string,
    phoneNumberId: r.phone_number_id,
  }));
}
