import type { Kysely, Migration } from 'kysely';

/**
 * Rich outbound messages: what a send carried beside its text (a file, reply buttons, a list, the
 * message it quotes, a template's header file) as JSON in a table of its own, written only for
 * such sends so that a plain send stores nothing more; and the provider's media IDs of files
 * Parley uploaded for a sending number, reused while the provider keeps them.
 */
export const richOutbound: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('message_contents')
      .addColumn('message_id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('provider_media')
      .addColumn('media_id', 'text', (c) => c.notNull())
      .addColumn('number_id', 'text', (c) => c.notNull())
      .addColumn('provider_media_id', 'text', (c) => c.notNull())
      .addColumn('uploaded_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('provider_media_pk', ['media_id', 'number_id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('provider_media').execute();
    await db.schema.dropTable('message_contents').execute();
  },
};
