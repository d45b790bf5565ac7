import type { Kysely, Migration } from 'kysely';

export const messaging: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('messaging_numbers')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('phone', 'text', (c) => c.notNull().unique())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('phone_number_id', 'text', (c) => c.notNull().unique())
      .addColumn('access_token_enc', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('messaging_numbers_org_idx').on('messaging_numbers').columns(['org_id']).execute();

    await db.schema
      .createTable('messages')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('number_id', 'text', (c) => c.notNull())
      .addColumn('to_phone', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('template_name', 'text')
      .addColumn('provider_message_id', 'text', (c) => c.unique())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('status_rank', 'integer', (c) => c.notNull())
      .addColumn('error_code', 'integer')
      .addColumn('error_message', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('messages_org_idx').on('messages').columns(['org_id', 'created_at']).execute();

    await db.schema
      .createTable('message_statuses')
      .addColumn('message_id', 'text', (c) => c.notNull().references('messages.id').onDelete('cascade'))
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('occurred_at', 'bigint', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .addColumn('error_code', 'integer')
      .addColumn('error_message', 'text')
      .addPrimaryKeyConstraint('message_statuses_pk', ['message_id', 'status'])
      .execute();

    await db.schema
      .createTable('pending_statuses')
      .addColumn('provider_message_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('occurred_at', 'bigint', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .addColumn('error_code', 'integer')
      .addColumn('error_message', 'text')
      .addPrimaryKeyConstraint('pending_statuses_pk', ['provider_message_id', 'status'])
      .execute();

    await db.schema
      .createTable('inbound_messages')
      .addColumn('provider_message_id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('number_id', 'text', (c) => c.notNull())
      .addColumn('from_phone', 'text', (c) => c.notNull())
      .addColumn('text', 'text')
      .addColumn('sent_at', 'bigint', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('messaging_windows')
      .addColumn('number_id', 'text', (c) => c.notNull())
      .addColumn('user_phone', 'text', (c) => c.notNull())
      .addColumn('last_inbound_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('messaging_windows_pk', ['number_id', 'user_phone'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    for (const table of [
      'messaging_windows',
      'inbound_messages',
      'pending_statuses',
      'message_statuses',
      'messages',
      'messaging_numbers',
    ]) {
      await db.schema.dropTable(table).execute();
    }
  },
};
