import type { Kysely, Migration } from 'kysely';

/**
 * Provider webhook bodies between their acknowledgement and the end of their processing: written
 * before the 200, deleted once every message and status in them is applied, replayed at start-up
 * if the process stopped in between (the provider does not redeliver what it saw acknowledged).
 */
export const webhookInbox: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('webhook_inbox')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('webhook_inbox').execute();
  },
};
