import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/** SQL of authentication's own bookkeeping: when keys were last used. */

/** A key's first use, written at once (only if none was recorded meanwhile). */
export async function recordFirstUse(db: Kysely<DB>, keyId: string, at: number): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ last_used_at: at })
    .where('id', '=', keyId)
    .where('last_used_at', 'is', null)
    .execute();
}

/** Later uses, kept in memory and written together: each key moves forward only. */
export async function recordLastUses(db: Kysely<DB>, uses: readonly (readonly [string, number])[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const [id, at] of uses) {
      await trx
        .updateTable('api_keys')
        .set({ last_used_at: at })
        .where('id', '=', id)
        .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
        .execute();
    }
  });
}
