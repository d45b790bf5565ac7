import type { Kysely, Migration } from 'kysely';

/**
 * Invitations to the dashboard (a link shown once; only the SHA-256 of its token is stored), when
 * each person last signed in, and an index that serves a hook's latest attempts (its health).
 */
export const invitations: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('invitations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('invited_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('accepted_at', 'bigint')
      .execute();
    await db.schema.createIndex('invitations_org_idx').on('invitations').columns(['org_id', 'created_at']).execute();
    await db.schema.alterTable('users').addColumn('last_sign_in_at', 'bigint').execute();
    await db.schema
      .createIndex('event_deliveries_endpoint_updated_idx')
      .on('event_deliveries')
      .columns(['endpoint_id', 'updated_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('event_deliveries_endpoint_updated_idx').execute();
    await db.schema.alterTable('users').dropColumn('last_sign_in_at').execute();
    await db.schema.dropTable('invitations').execute();
  },
};
