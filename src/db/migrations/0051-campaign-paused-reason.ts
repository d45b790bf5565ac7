import type { Kysely, Migration } from 'kysely';

/**
 * Why a campaign is paused when Parley paused it (its number's quality rating turned RED); null
 * when it is active, or a person paused it.
 */
export const campaignPausedReason: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('campaigns').addColumn('paused_reason', 'text').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('campaigns').dropColumn('paused_reason').execute();
  },
};
