import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/** Rows of `provider_media`: a file's media ID at the provider, for one sending number. */

/** The provider's media ID of a file for a number, while it is valid at `now`. */
export async function findProviderMediaId(
  db: Kysely<DB>,
  mediaId: string,
  numberId: string,
  now: number,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('provider_media')
    .select('provider_media_id')
    .where('media_id', '=', mediaId)
    .where('number_id', '=', numberId)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return row?.provider_media_id;
}

/** Keeps (or replaces) the provider's media ID of a file for a number. */
export async function saveProviderMediaId(
  db: Kysely<DB>,
  row: { mediaId: string; numberId: string; providerMediaId: string; at: number; expiresAt: number },
): Promise<void> {
  await db
    .insertInto('provider_media')
    .values({
      media_id: row.mediaId,
      number_id: row.numberId,
      provider_media_id: row.providerMediaId,
      uploaded_at: row.at,
      expires_at: row.expiresAt,
    })
    .onConflict((oc) =>
      oc.columns(['media_id', 'number_id']).doUpdateSet({
        provider_media_id: row.providerMediaId,
        uploaded_at: row.at,
        expires_at: row.expiresAt,
      }),
    )
    .execute();
}
