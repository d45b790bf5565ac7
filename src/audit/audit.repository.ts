import type { Kysely } from 'kysely';
import { type Seek, seekPage } from '../db/keyset.js';
import type { DB } from '../db/schema.js';
import type { AuditLogTable } from './audit.tables.js';

export async function insertAuditEntry(db: Kysely<DB>, row: AuditLogTable): Promise<void> {
  await db.insertInto('audit_log').values(row).execute();
}

/** An organization's entries, newest first, at most `limit`. */
export async function listAuditRows(db: Kysely<DB>, orgId: string, limit: number): Promise<AuditLogTable[]> {
  return db
    .selectFrom('audit_log')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** A page of an organization's entries, newest first, on audit_log_org_at_id_idx (migration 0019). */
export async function listAuditPageRows(
  db: Kysely<DB>,
  orgId: string,
  seek: Seek | undefined,
  limit: number,
): Promise<AuditLogTable[]> {
  const query = db.selectFrom('audit_log').selectAll().where('org_id', '=', orgId);
  return seekPage(query, { at: 'at', id: 'id' }, { newestFirst: true, seek, limit }).execute();
}
