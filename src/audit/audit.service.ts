import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { newId } from '../shared/ids.js';
import { type PageRequest, pageOf, seekOf, type TwoWayPage } from '../shared/page.js';
import { insertAuditEntry, listAuditPageRows, listAuditRows } from './audit.repository.js';
import type { AuditLogTable } from './audit.tables.js';

/** The actor of what the `parley` command line does. */
export const CLI_ACTOR = 'cli';

export interface AuditEntry {
  id: string;
  orgId: string;
  /** `cli`, or the email address of the dashboard user. */
  actor: string;
  /** e.g. `key.created`, `key.revoked`, `plan.changed`, `endpoint.created`, `user.removed`. */
  action: string;
  targetType: string;
  targetId: string;
  details: Record<string, unknown> | null;
  at: number;
}

export interface AuditInput {
  orgId: string;
  actor: string;
  action: string;
  targetType: string;
  targetId: string;
  details?: Record<string, unknown>;
  at: number;
}

const toEntry = (row: AuditLogTable): AuditEntry => ({
  id: row.id,
  orgId: row.org_id,
  actor: row.actor,
  action: row.action,
  targetType: row.target_type,
  targetId: row.target_id,
  details: row.details ? (JSON.parse(row.details) as Record<string, unknown>) : null,
  at: Number(row.at),
});

/**
 * Records one action. Pass the transaction of the change itself as `db`, so the entry is written
 * with it or not at all. Never pass a secret in `details`.
 */
export async function recordAudit(db: Kysely<DB>, input: AuditInput): Promise<void> {
  await insertAuditEntry(db, {
    id: newId('aud'),
    org_id: input.orgId,
    actor: input.actor,
    action: input.action,
    target_type: input.targetType,
    target_id: input.targetId,
    details: input.details ? JSON.stringify(input.details) : null,
    at: input.at,
  });
}

/** An organization's entries, newest first. */
export async function listAudit(
  db: Kysely<DB>,
  orgId: string,
  options: { limit?: number } = {},
): Promise<AuditEntry[]> {
  const rows = await listAuditRows(db, orgId, Math.min(Math.max(options.limit ?? 500, 1), 5000));
  return rows.map(toEntry);
}

/** The dashboard's audit log: newest first, a page at a time both ways. */
export async function pageOfAudit(
  db: Kysely<DB>,
  orgId: string,
  request: PageRequest,
): Promise<TwoWayPage<AuditEntry>> {
  const seek = seekOf(request, /^aud_[A-Za-z0-9]{22}$/);
  const rows = await listAuditPageRows(db, orgId, seek, request.limit + 1);
  return pageOf(rows, request.limit, seek, (r) => ({ at: Number(r.at), id: r.id }), toEntry);
}

/** Runs `fn` in a transaction, or in the caller's when `db` already is one. */
export async function inTransaction<T>(db: Kysely<DB>, fn: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db);
  return db.transaction().execute(fn);
}
