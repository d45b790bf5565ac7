import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/**
 * The unrouted store: provider webhook bodies with an inbound message for a phone number ID no
 * number has, kept until the number is added or an operator replays them.
 */

export interface UnroutedWebhook {
  readonly id: string;
  /** The raw body, as signed. */
  readonly body: string;
  readonly receivedAt: number;
  readonly attempts: number;
  readonly error: string;
  readonly keptAt: number;
  /** The phone number IDs no number had (none listed when the webhook named none). */
  readonly phoneNumberIds: string[];
}

type Row = DB['webhook_unrouted'];

const toUnrouted = (row: Row): UnroutedWebhook => ({
  id: row.id,
  body: row.body,
  receivedAt: Number(row.received_at),
  attempts: Number(row.attempts),
  error: row.last_error,
  keptAt: Number(row.kept_at),
  phoneNumberIds: row.phone_number_ids.split(',').filter(Boolean),
});

/** `,id1,id2,` and the error an unrouted body carries. */
function unroutedColumns(ids: ReadonlySet<string>) {
  const list = [...ids];
  return {
    last_error: `unknown number: no messaging number has phone number ID ${list.map((id) => `'${id}'`).join(', ')}`,
    phone_number_ids: `,${list.join(',')},`,
  };
}

/** Keeps a body (idempotent: a body kept before stays as it was). */
export async function insertUnrouted(
  db: Kysely<DB>,
  body: {
    id: string;
    body: string;
    receivedAt: number;
    attempts: number;
    at: number;
    phoneNumberIds: ReadonlySet<string>;
  },
): Promise<void> {
  await db
    .insertInto('webhook_unrouted')
    .values({
      id: body.id,
      body: body.body,
      received_at: body.receivedAt,
      attempts: body.attempts,
      kept_at: body.at,
      ...unroutedColumns(body.phoneNumberIds),
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/** Kept bodies, oldest first: all, the one with `id`, or those naming `phoneNumberId`. */
export async function listUnrouted(
  db: Kysely<DB>,
  filter: { id?: string; phoneNumberId?: string } = {},
): Promise<UnroutedWebhook[]> {
  let query = db.selectFrom('webhook_unrouted').selectAll();
  if (filter.id !== undefined) query = query.where('id', '=', filter.id);
  if (filter.phoneNumberId !== undefined) {
    query = query.where('phone_number_ids', 'like', `%,${filter.phoneNumberId},%`);
  }
  const rows = await query.orderBy('received_at').orderBy('id').execute();
  return rows.map(toUnrouted);
}

/** Whether a kept body's text contains `text` (a cheap filter; the caller checks what it finds). */
export async function unroutedContaining(db: Kysely<DB>, text: string): Promise<UnroutedWebhook[]> {
  const rows = await db.selectFrom('webhook_unrouted').selectAll().where('body', 'like', `%${text}%`).execute();
  return rows.map(toUnrouted);
}

/** A replayed body still unrouted: its attempts, time and the phone number IDs still unknown. */
export async function updateUnrouted(
  db: Kysely<DB>,
  id: string,
  change: { attempts: number; at: number; phoneNumberIds: ReadonlySet<string> },
): Promise<void> {
  await db
    .updateTable('webhook_unrouted')
    .set({ attempts: change.attempts, kept_at: change.at, ...unroutedColumns(change.phoneNumberIds) })
    .where('id', '=', id)
    .execute();
}

export async function deleteUnrouted(db: Kysely<DB>, id: string): Promise<void> {
  await db.deleteFrom('webhook_unrouted').where('id', '=', id).execute();
}
