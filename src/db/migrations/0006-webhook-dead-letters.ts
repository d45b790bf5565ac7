import type { Kysely, Migration } from 'kysely';

/**
 * Webhook bodies that could not be applied stay in `webhook_inbox`, out of the live queue: `failed`
 * (their work kept failing after the in-process retries) or `unrouted` (an inbound message for a
 * phone number ID no number has), with the error, the attempts and the unknown phone number IDs,
 * until an operator replays them (`parley webhooks retry`, or adding the number). Pending statuses
 * remember the number they were reported for, and are purged by age.
 */
export const webhookDeadLetters: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('webhook_inbox')
      .addColumn('state', 'text', (c) => c.notNull().defaultTo('live'))
      .execute();
    await db.schema
      .alterTable('webhook_inbox')
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('webhook_inbox').addColumn('last_error', 'text').execute();
    await db.schema.alterTable('webhook_inbox').addColumn('failed_at', 'bigint').execute();
    await db.schema.alterTable('webhook_inbox').addColumn('phone_number_ids', 'text').execute();
    await db.schema
      .createIndex('webhook_inbox_state_idx')
      .on('webhook_inbox')
      .columns(['state', 'received_at'])
      .execute();

    await db.schema.alterTable('pending_statuses').addColumn('phone_number_id', 'text').execute();
    await db.schema
      .createIndex('pending_statuses_received_idx')
      .on('pending_statuses')
      .columns(['received_at'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('pending_statuses_received_idx').execute();
    await db.schema.alterTable('pending_statuses').dropColumn('phone_number_id').execute();
    await db.schema.dropIndex('webhook_inbox_state_idx').execute();
    for (const column of ['phone_number_ids', 'failed_at', 'last_error', 'attempts', 'state']) {
      await db.schema.alterTable('webhook_inbox').dropColumn(column).execute();
    }
  },
};
