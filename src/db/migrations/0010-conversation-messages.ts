import type { Kysely, Migration } from 'kysely';

/**
 * What a conversation's thread shows of each message: the text or the template (name, language,
 * parameters) of an outbound message, the type of an inbound one; and the conversation list's index.
 */
export const conversationMessages: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('messages').addColumn('text', 'text').execute();
    await db.schema.alterTable('messages').addColumn('template_language', 'text').execute();
    /** JSON `{"body": [...], "header": [...]}` of a template send. */
    await db.schema.alterTable('messages').addColumn('template_parameters', 'text').execute();
    await db.schema.alterTable('inbound_messages').addColumn('type', 'text').execute();
    // The conversation list: newest first, a keyset seek on (started_at, id) per organization.
    await db.schema
      .createIndex('conversations_org_started_idx')
      .on('conversations')
      .columns(['org_id', 'started_at', 'id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('conversations_org_started_idx').execute();
    await db.schema.alterTable('inbound_messages').dropColumn('type').execute();
    await db.schema.alterTable('messages').dropColumn('template_parameters').execute();
    await db.schema.alterTable('messages').dropColumn('template_language').execute();
    await db.schema.alterTable('messages').dropColumn('text').execute();
  },
};
