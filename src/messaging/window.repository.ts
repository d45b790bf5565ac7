import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

/** SQL of the customer-service windows (their read on the send path is in message.fast.ts). */

/** Opens or renews the window (`userKey`: `windowKey()` of the phone); a message delivered late does not shorten it. */
export async function openWindow(db: Kysely<DB>, numberId: string, userKey: string, at: number): Promise<void> {
  await db
    .insertInto('messaging_windows')
    .values({ number_id: numberId, user_phone: userKey, last_inbound_at: at })
    .onConflict((oc) =>
      oc.columns(['number_id', 'user_phone']).doUpdateSet({
        last_inbound_at: sql<number>`case when excluded.last_inbound_at > messaging_windows.last_inbound_at then excluded.last_inbound_at else messaging_windows.last_inbound_at end`,
      }),
    )
    .execute();
}
