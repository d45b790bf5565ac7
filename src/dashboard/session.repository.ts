import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../db/precompiled.js';
import type { DB } from '../db/schema.js';
import type { UserTable } from './dashboard.tables.js';

/** SQL of dashboard sessions (stored by the SHA-256 of their token) and failed sign-ins; nothing else. */

/** Failed sign-ins of a subject (`email:…` or `addr:…`) after `since`. */
export async function countSignInFailures(db: Kysely<DB>, subject: string, since: number): Promise<number> {
  const row = await db
    .selectFrom('sign_in_failures')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('subject', '=', subject)
    .where('at', '>', since)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * One sign-in attempt, as one atomic step before its password is checked: under each subject's
 * limit of failures since `since`, the attempt is recorded as a failure of every subject (a
 * success takes it back); over a limit, nothing is recorded and false is answered. Concurrent
 * attempts are serialized (SQLite's one writer; PostgreSQL's transaction-scoped advisory lock
 * per subject), so twelve wrong passwords at once cannot all pass a limit of five.
 */
export async function claimSignInAttempt(
  db: Kysely<DB>,
  subjects: readonly { subject: string; limit: number }[],
  at: number,
  since: number,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    if (isPostgres(db)) {
      for (const subject of subjects.map((s) => s.subject).sort()) {
        await sql`select pg_advisory_xact_lock(hashtext(${`parley-sign-in:${subject}`}))`.execute(trx);
      }
    }
    for (const { subject, limit } of subjects) {
      if ((await countSignInFailures(trx, subject, since)) >= limit) return false;
    }
    await recordSignInFailure(
      trx,
      subjects.map((s) => s.subject),
      at,
      since,
    );
    return true;
  });
}

/** Takes back the attempt recorded at `at` for a subject (it succeeded). */
export async function forgetSignInAttempt(db: Kysely<DB>, subject: string, at: number): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('subject', '=', subject).where('at', '=', at).execute();
}

/** Records one failure for each subject at `at`, and forgets theirs from `since` back. */
export async function recordSignInFailure(
  db: Kysely<DB>,
  subjects: readonly string[],
  at: number,
  since: number,
): Promise<void> {
  await db
    .insertInto('sign_in_failures')
    .values(subjects.map((subject) => ({ subject, at })))
    .execute();
  await db
    .deleteFrom('sign_in_failures')
    .where('subject', 'in', [...subjects])
    .where('at', '<=', since)
    .execute();
}

export async function clearSignInFailures(db: Kysely<DB>, subject: string): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('subject', '=', subject).execute();
}

/** The person who signs in with this (normalized) email, any organization. */
export async function findUserByEmail(db: Kysely<DB>, email: string): Promise<UserTable | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
}

/** Removes the person's sessions last seen before `before`. */
/** A person's sessions unused since `seenBefore` or opened before `createdBefore`. */
export async function deleteIdleSessions(
  db: Kysely<DB>,
  userId: string,
  before: { seenBefore: number; createdBefore: number },
): Promise<void> {
  await db
    .deleteFrom('dashboard_sessions')
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('last_seen_at', '<', before.seenBefore), eb('created_at', '<', before.createdBefore)]))
    .execute();
}

export async function insertSession(
  db: Kysely<DB>,
  row: { tokenHash: string; userId: string; orgId: string; at: number },
): Promise<void> {
  await db
    .insertInto('dashboard_sessions')
    .values({
      token_hash: row.tokenHash,
      user_id: row.userId,
      org_id: row.orgId,
      created_at: row.at,
      last_seen_at: row.at,
    })
    .execute();
}

/** The session of a token hash with its person, and the organization the session was opened in. */
export async function findSessionWithUser(
  db: Kysely<DB>,
  tokenHash: string,
): Promise<(UserTable & { last_seen_at: number; session_org_id: string; session_created_at: number }) | undefined> {
  return db
    .selectFrom('dashboard_sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .selectAll('u')
    .select(['s.last_seen_at', 's.org_id as session_org_id', 's.created_at as session_created_at'])
    .where('s.token_hash', '=', tokenHash)
    .executeTakeFirst();
}

export async function touchSession(db: Kysely<DB>, tokenHash: string, at: number): Promise<void> {
  await db.updateTable('dashboard_sessions').set({ last_seen_at: at }).where('token_hash', '=', tokenHash).execute();
}

export async function deleteSession(db: Kysely<DB>, tokenHash: string): Promise<void> {
  await db.deleteFrom('dashboard_sessions').where('token_hash', '=', tokenHash).execute();
}

/** Every session of a person (removed, or given a new password). */
export async function deleteSessionsOfUser(db: Kysely<DB>, userId: string): Promise<void> {
  await db.deleteFrom('dashboard_sessions').where('user_id', '=', userId).execute();
}
