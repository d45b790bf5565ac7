/**
 * The hot statement of a marketing template's send: the recipient's consent. Declared once with
 * `precompiled()` (src/db/precompiled.ts): a prepared statement on SQLite, a named prepared
 * statement on PostgreSQL. Run only when the catalogue says a template is `MARKETING` (or with
 * PARLEY_OPT_OUT_STRICT), so other sends pay nothing for it.
 */
import type { Kysely } from 'kysely';
import { precompiled, slot } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';

const consentByPhone = precompiled((db) =>
  db
    .selectFrom('end_users')
    .select('consent')
    .where('org_id', '=', slot<string>(0))
    .where('phone', '=', slot<string>(1)),
);

/** The stored consent JSON of the organization's end user with this phone, if there is one. */
export async function consentOfPhone(db: Kysely<DB>, orgId: string, phone: string): Promise<string | undefined> {
  return (await consentByPhone(db, [orgId, phone])).rows[0]?.consent;
}
