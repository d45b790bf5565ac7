import type { Kysely, Migration } from 'kysely';

/**
 * A random token per claim of an idempotency key, so that a request whose claim (an INSERT, or the
 * takeover of an abandoned claim) lost its answer with its connection can read back whether the
 * claim committed and is its own. Claims made before it have none: they complete as before.
 */
export const idempotencyClaimToken: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('idempotency_keys').addColumn('claim_token', 'text').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('idempotency_keys').dropColumn('claim_token').execute();
  },
};
