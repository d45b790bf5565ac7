import type { Kysely, Migration } from 'kysely';

/**
 * Indexes of the dashboard's paged lists, each a keyset seek on (time, id) per organization: the
 * audit log (its old index had no id, so a page boundary inside one millisecond needed a sort),
 * the campaigns and the API keys.
 */
export const listIndexes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.createIndex('audit_log_org_at_id_idx').on('audit_log').columns(['org_id', 'at', 'id']).execute();
    await db.schema.dropIndex('audit_log_org_idx').execute();
    await db.schema
      .createIndex('campaigns_org_created_idx')
      .on('campaigns')
      .columns(['org_id', 'created_at', 'id'])
      .execute();
    await db.schema
      .createIndex('api_keys_org_created_id_idx')
      .on('api_keys')
      .columns(['org_id', 'created_at', 'id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('api_keys_org_created_id_idx').execute();
    await db.schema.dropIndex('campaigns_org_created_idx').execute();
    await db.schema.createIndex('audit_log_org_idx').on('audit_log').columns(['org_id', 'at']).execute();
    await db.schema.dropIndex('audit_log_org_at_id_idx').execute();
  },
};
