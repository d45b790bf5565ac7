import type { Kysely, Migration } from 'kysely';

/** Idempotency keys of the send endpoint: one row per (organization, key), claimed by INSERT. */
export const idempotency: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('idempotency_keys')
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('response_status', 'integer')
      .addColumn('response_body', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('idempotency_keys_org_key_unique', ['org_id', 'key'])
      .execute();
    // Lets a purge of expired keys find them without a full scan.
    await db.schema
      .createIndex('idempotency_keys_created_idx')
      .on('idempotency_keys')
      .columns(['created_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('idempotency_keys').execute();
  },
};
