import type { Kysely, Migration } from 'kysely';

/**
 * A campaign sent to a segment, now or at a time: the send, its state and its progress through the
 * segment's members (the last member turned into a delivery, so a run taken over after a crash
 * goes on from there).
 */
export const segmentSends: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('segment_sends')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
      .addColumn('campaign_id', 'text', (c) => c.notNull())
      .addColumn('segment_id', 'text', (c) => c.notNull())
      .addColumn('segment_name', 'text', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      /** JSON `{"body": [...], "header": [...]}` for every delivery; null: the campaign's defaults. */
      .addColumn('parameters', 'text')
      /** scheduled → running → done; scheduled → canceled. */
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('members', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('accepted', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('duplicates', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('opted_out', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('skipped', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('after_end_user_id', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('error', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('started_at', 'bigint')
      .addColumn('finished_at', 'bigint')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('segment_sends_campaign_created_idx')
      .on('segment_sends')
      .columns(['campaign_id', 'created_at', 'id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('segment_sends').execute();
  },
};
