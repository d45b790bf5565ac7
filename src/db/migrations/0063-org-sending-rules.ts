import type { Kysely, Migration } from 'kysely';

/**
 * An organization's sending rules, in a table of their own: quiet hours (in its time zone), when
 * campaign deliveries wait, and a cap on the marketing templates an end user receives a day. Each
 * is off while null. Also the index the cap reads: an organization's messages to one phone by time.
 */
export const orgSendingRules: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('org_sending_rules')
      .addColumn('org_id', 'text', (c) => c.primaryKey().references('organizations.id').onDelete('cascade'))
      /** `HH:MM`, 24-hour, in time_zone; both set or both null. */
      .addColumn('quiet_start', 'text')
      .addColumn('quiet_end', 'text')
      /** IANA name, e.g. Europe/Lisbon. */
      .addColumn('time_zone', 'text')
      /** Marketing templates an end user may receive in 24 hours; null: no cap. */
      .addColumn('marketing_cap', 'integer')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    /** Delivery rows held back by quiet hours: until when (what a person, and a test, can see). */
    await db.schema.alterTable('campaign_deliveries').addColumn('held_until', 'bigint').execute();
    await db.schema
      .createIndex('messages_org_to_created_idx')
      .on('messages')
      .columns(['org_id', 'to_phone', 'created_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('messages_org_to_created_idx').execute();
    await db.schema.alterTable('campaign_deliveries').dropColumn('held_until').execute();
    await db.schema.dropTable('org_sending_rules').execute();
  },
};
