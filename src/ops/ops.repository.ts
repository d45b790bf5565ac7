import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

/** The cheapest statement the database can answer: the readiness check's probe. */
export async function selectOne(db: Kysely<DB>): Promise<void> {
  await sql`select 1`.execute(db);
}
