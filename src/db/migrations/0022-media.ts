import type { Kysely, Migration } from 'kysely';

/**
 * Media: one row per file Parley keeps (a photo a user sent, a file an agent uploaded), its bytes
 * in the media store under `storage_key`. `state`: `pending` (an inbound file not yet downloaded),
 * `stored`, `unavailable` (the download kept failing, or the bytes did not match), `deleted`
 * (past its retention: the row stays, so its address can say so). Inbound messages gain what
 * their kind carries beside the text: the media, the message they reply to, and the rest of the
 * kind (a location, a button or list reply, a reaction, contacts) as JSON.
 */
export const media: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('media')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('mime_type', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint')
      .addColumn('sha256', 'text')
      .addColumn('filename', 'text')
      .addColumn('store', 'text')
      .addColumn('storage_key', 'text')
      .addColumn('provider_media_id', 'text')
      .addColumn('number_id', 'text')
      .addColumn('agent_id', 'text')
      .addColumn('unavailable_reason', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('stored_at', 'bigint')
      .addColumn('deleted_at', 'bigint')
      .execute();
    // The retention sweep: the oldest media not yet deleted, per state.
    await db.schema.createIndex('media_state_created_idx').on('media').columns(['state', 'created_at']).execute();
    await db.schema.alterTable('inbound_messages').addColumn('media_id', 'text').execute();
    await db.schema.alterTable('inbound_messages').addColumn('reply_to', 'text').execute();
    await db.schema.alterTable('inbound_messages').addColumn('content', 'text').execute();
    // Who may read a file: the agent of the conversation whose message holds it.
    await db.schema.createIndex('inbound_messages_media_idx').on('inbound_messages').columns(['media_id']).execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('inbound_messages_media_idx').execute();
    await db.schema.alterTable('inbound_messages').dropColumn('content').execute();
    await db.schema.alterTable('inbound_messages').dropColumn('reply_to').execute();
    await db.schema.alterTable('inbound_messages').dropColumn('media_id').execute();
    await db.schema.dropIndex('media_state_created_idx').execute();
    await db.schema.dropTable('media').execute();
  },
};
