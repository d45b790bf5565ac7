/**
 * The provider webhooks' hot statements: run for every inbound message a webhook brings. Each is
 * declared with `precompiled()` (src/db/precompiled.ts): built and compiled once, a prepared
 * statement on SQLite (read in the read transaction of its event-loop turn) and a named prepared
 * statement on PostgreSQL (outside transactions). Reads only: no write here joins a group commit.
 */
import { precompiled, slot } from '../db/precompiled.js';

/** The number (its ID and organization) a webhook's `metadata.phone_number_id` names. */
export const numberByPhoneNumberId = precompiled((db) =>
  db.selectFrom('messaging_numbers').select(['id', 'org_id']).where('phone_number_id', '=', slot<string>(0)),
);
