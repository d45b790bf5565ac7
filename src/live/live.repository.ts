import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

/**
 * PostgreSQL: tells every node listening on this schema's channel (live.model.ts `channelOf`).
 * Inside a transaction PostgreSQL delivers the notification when it commits, and never when it
 * rolls back, so no page is told of a change it cannot read yet.
 */
export async function notifyLive(db: Kysely<DB>, payload: string): Promise<void> {
  await sql`select pg_notify('parley_live_' || left(md5(current_schema()), 16), ${payload})`.execute(db);
}
