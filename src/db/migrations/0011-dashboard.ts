import type { Kysely, Migration } from 'kysely';

/** Dashboard people, their sessions, failed sign-ins (the limit every node shares) and the audit log. */
export const dashboard: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('users')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      // Lower-cased; one person per address in a region, so the sign-in form needs only the address.
      .addColumn('email', 'text', (c) => c.notNull().unique())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('password_hash', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('users_org_idx').on('users').columns(['org_id']).execute();

    await db.schema
      .createTable('dashboard_sessions')
      // SHA-256 of the cookie's token: the token itself is never stored.
      .addColumn('token_hash', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('dashboard_sessions_user_idx').on('dashboard_sessions').columns(['user_id']).execute();

    await db.schema
      .createTable('sign_in_failures')
      // `email:<address>` or `addr:<client address>`.
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('sign_in_failures_idx').on('sign_in_failures').columns(['subject', 'at']).execute();

    await db.schema
      .createTable('audit_log')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('target_type', 'text', (c) => c.notNull())
      .addColumn('target_id', 'text', (c) => c.notNull())
      .addColumn('details', 'text')
      .addColumn('at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audit_log_org_idx').on('audit_log').columns(['org_id', 'at']).execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('audit_log').execute();
    await db.schema.dropTable('sign_in_failures').execute();
    await db.schema.dropTable('dashboard_sessions').execute();
    await db.schema.dropTable('users').execute();
  },
};
