import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Conversations and the events about them: triggers (an agent's entry points), conversations (one
 * open per agent and end user), the conversation of every message, the organization's event
 * endpoints (an agent's hook when bound to one) and the deliveries of events to them.
 */
export const conversations: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('triggers')
      .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('template_name', 'text', (c) => c.notNull())
      .addColumn('template_language', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('triggers_pk', ['agent_id', 'id'])
      .execute();
    await db.schema.createIndex('triggers_org_idx').on('triggers').columns(['org_id', 'agent_id']).execute();

    await db.schema
      .createTable('conversations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('end_user_id', 'text', (c) => c.notNull())
      .addColumn('trigger_id', 'text')
      .addColumn('campaign_id', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('context', 'text')
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      .addColumn('last_message_at', 'bigint', (c) => c.notNull())
      .addColumn('closed_at', 'bigint')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    // One open conversation per agent and end user: the index decides races between nodes.
    await sql`create unique index conversations_open_idx on conversations (agent_id, end_user_id) where status = 'open'`.execute(
      db,
    );
    await db.schema
      .createIndex('conversations_org_updated_idx')
      .on('conversations')
      .columns(['org_id', 'updated_at', 'id'])
      .execute();
    await db.schema
      .createIndex('conversations_idle_idx')
      .on('conversations')
      .columns(['status', 'last_message_at'])
      .execute();

    await db.schema.alterTable('messages').addColumn('conversation_id', 'text').execute();
    await db.schema
      .createIndex('messages_conversation_idx')
      .on('messages')
      .columns(['conversation_id', 'created_at'])
      .execute();
    await db.schema.alterTable('inbound_messages').addColumn('conversation_id', 'text').execute();
    await db.schema
      .createIndex('inbound_messages_conversation_idx')
      .on('inbound_messages')
      .columns(['conversation_id', 'received_at'])
      .execute();

    await db.schema
      .createTable('event_endpoints')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('agent_id', 'text')
      .addColumn('url', 'text', (c) => c.notNull())
      /** Comma-separated event types, or '*' for all. */
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('secret', 'text', (c) => c.notNull())
      .addColumn('previous_secret', 'text')
      .addColumn('previous_secret_until', 'bigint')
      .addColumn('disabled_at', 'bigint')
      .addColumn('disabled_reason', 'text')
      .addColumn('failing_since', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('event_endpoints_org_idx').on('event_endpoints').columns(['org_id']).execute();

    await db.schema
      .createTable('event_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('endpoint_id', 'text', (c) => c.notNull().references('event_endpoints.id').onDelete('cascade'))
      .addColumn('org_id', 'text', (c) => c.notNull())
      /** The event's ID: the `webhook-id` header, the same on every attempt. */
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('last_status_code', 'integer')
      .addColumn('last_error', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('delivered_at', 'bigint')
      .execute();
    // An event reaches an endpoint once, however often the work that raised it runs.
    await db.schema
      .createIndex('event_deliveries_event_idx')
      .on('event_deliveries')
      .columns(['endpoint_id', 'event_id'])
      .unique()
      .execute();
    await db.schema
      .createIndex('event_deliveries_endpoint_idx')
      .on('event_deliveries')
      .columns(['endpoint_id', 'created_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('event_deliveries').execute();
    await db.schema.dropTable('event_endpoints').execute();
    await db.schema.dropIndex('inbound_messages_conversation_idx').execute();
    await db.schema.alterTable('inbound_messages').dropColumn('conversation_id').execute();
    await db.schema.dropIndex('messages_conversation_idx').execute();
    await db.schema.alterTable('messages').dropColumn('conversation_id').execute();
    await db.schema.dropTable('conversations').execute();
    await db.schema.dropTable('triggers').execute();
  },
};
