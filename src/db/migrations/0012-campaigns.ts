import type { Kysely, Migration } from 'kysely';

/**
 * Webhook campaigns: what a campaign sends (agent, template, default parameters) and whether it is
 * paused; its deliveries (one per accepted recipient) and the dedupe keys of the last 30 days.
 */
export const campaigns: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('campaigns').addColumn('agent_id', 'text').execute();
    await db.schema.alterTable('campaigns').addColumn('template_name', 'text').execute();
    await db.schema.alterTable('campaigns').addColumn('template_language', 'text').execute();
    await db.schema.alterTable('campaigns').addColumn('default_parameters', 'text').execute();
    await db.schema
      .alterTable('campaigns')
      .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
      .execute();
    await db.schema.alterTable('campaigns').addColumn('updated_at', 'bigint').execute();

    await db.schema
      .createTable('campaign_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('campaign_id', 'text', (c) => c.notNull().references('campaigns.id').onDelete('cascade'))
      .addColumn('to_phone', 'text', (c) => c.notNull())
      .addColumn('parameters', 'text')
      .addColumn('end_user', 'text')
      .addColumn('dedupe_key', 'text')
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('message_id', 'text')
      .addColumn('claimed_at', 'bigint')
      .addColumn('end_user_id', 'text')
      .addColumn('conversation_id', 'text')
      .addColumn('error', 'text')
      .addColumn('throttles', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('sent_at', 'bigint')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('campaign_deliveries_list_idx')
      .on('campaign_deliveries')
      .columns(['campaign_id', 'created_at', 'id'])
      .execute();
    await db.schema
      .createIndex('campaign_deliveries_state_idx')
      .on('campaign_deliveries')
      .columns(['campaign_id', 'state'])
      .execute();

    await db.schema
      .createTable('campaign_dedupe_keys')
      .addColumn('campaign_id', 'text', (c) => c.notNull().references('campaigns.id').onDelete('cascade'))
      .addColumn('dedupe_key', 'text', (c) => c.notNull())
      .addColumn('delivery_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('campaign_dedupe_keys_pk', ['campaign_id', 'dedupe_key'])
      .execute();
    await db.schema
      .createIndex('campaign_dedupe_keys_age_idx')
      .on('campaign_dedupe_keys')
      .columns(['campaign_id', 'created_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('campaign_dedupe_keys').execute();
    await db.schema.dropTable('campaign_deliveries').execute();
    for (const column of [
      'updated_at',
      'status',
      'default_parameters',
      'template_language',
      'template_name',
      'agent_id',
    ]) {
      await db.schema.alterTable('campaigns').dropColumn(column).execute();
    }
  },
};
