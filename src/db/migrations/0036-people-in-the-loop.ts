import type { Kysely, Migration } from 'kysely';

/**
 * People in the loop: who handles a conversation (the bot or people), its assignee and the last
 * handoff; since when a customer waits for a person and when a person first answered; an agent's
 * holding text; who sent a message that the bot did not (a person, or Parley itself); and the
 * team's internal notes on a conversation.
 */
export const peopleInTheLoop: Migration = {
  async up(db: Kysely<unknown>) {
    const conversations = [
      ['handler', 'text'],
      ['assignee_id', 'text'],
      ['assignee_name', 'text'],
      ['handoff_reason', 'text'],
      ['handoff_note', 'text'],
      ['handoff_by', 'text'],
      ['handoff_at', 'bigint'],
      ['waiting_since', 'bigint'],
      ['human_replied_at', 'bigint'],
    ] as const;
    for (const [name, type] of conversations) {
      await db.schema
        .alterTable('conversations')
        .addColumn(name, type, (c) => (name === 'handler' ? c.notNull().defaultTo('bot') : c))
        .execute();
    }
    // The inbox: an organization's conversations by handler, newest activity first.
    await db.schema
      .createIndex('conversations_org_handler_idx')
      .on('conversations')
      .columns(['org_id', 'status', 'handler', 'last_message_at'])
      .execute();
    await db.schema.alterTable('agents').addColumn('holding_text', 'text').execute();

    await db.schema
      .createTable('message_authors')
      .addColumn('message_id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull())
      /** `user` (a person of the dashboard) or `parley` (the holding text). */
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text')
      .addColumn('name', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('conversation_notes')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull())
      .addColumn('conversation_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('author_name', 'text', (c) => c.notNull())
      .addColumn('text', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('conversation_notes_conversation_idx')
      .on('conversation_notes')
      .columns(['conversation_id', 'created_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('conversation_notes').execute();
    await db.schema.dropTable('message_authors').execute();
    await db.schema.alterTable('agents').dropColumn('holding_text').execute();
    await db.schema.dropIndex('conversations_org_handler_idx').execute();
    for (const name of [
      'human_replied_at',
      'waiting_since',
      'handoff_at',
      'handoff_by',
      'handoff_note',
      'handoff_reason',
      'assignee_name',
      'assignee_id',
      'handler',
    ]) {
      await db.schema.alterTable('conversations').dropColumn(name).execute();
    }
  },
};
