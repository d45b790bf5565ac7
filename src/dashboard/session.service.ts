import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DashboardConfig } from '../config.js';
import type { DB } from '../db/schema.js';
import { getOrganization, type Organization } from '../orgs/org.service.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { Semaphore } from '../shared/semaphore.js';
import { decoyHash, hashPassword, needsRehash, verifyPassword } from './password.js';
import {
  claimSignInAttempt,
  clearSignInFailures,
  deleteIdleSessions,
  deleteSession,
  findSessionWithUser,
  findUserByEmail,
  forgetSignInAttempt,
  insertSession,
  touchSession,
} from './session.repository.js';
import { tokenHash } from './token-hash.js';
import { setLastSignIn, setPasswordHash } from './user.repository.js';
import { toUser, type User } from './user.service.js';

/** The one answer to a wrong email and to a wrong password alike. */
export const SIGN_IN_REFUSED = 'Wrong email or password.';
export const SIGN_IN_LIMITED = 'Too many failed sign-ins. Wait 15 minutes and try again.';

/** Password hashes (scrypt, a thread each) run at most this many at once per process; the rest queue. */
export const CONCURRENT_PASSWORD_CHECKS = 2;
const passwordChecks = new Semaphore(CONCURRENT_PASSWORD_CHECKS);

/** The CSRF token of a session: derived from its token, so it is neither stored nor derivable from the database. */
export const csrfTokenOf = (sessionToken: string) =>
  createHash('sha256').update(`csrf:${sessionToken}`).digest('base64url');

export function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface Session {
  user: User;
  org: Organization;
  csrfToken: string;
  /** Conversations waiting for a person: the navigation's Inbox count (read for whole pages only). */
  waiting?: number;
}

/**
 * Checks the credentials and opens a new session (a fresh token at every sign-in). Failures are
 * counted per email and per client address in the database, so every node shares the limits.
 */
export async function signIn(
  db: Kysely<DB>,
  clock: Clock,
  config: DashboardConfig,
  input: { email: string; password: string; address: string },
): Promise<{ token: string; session: Session }> {
  const email = input.email.trim().toLowerCase().slice(0, 254);
  const now = clock.now();
  const since = now - config.signInLimit.windowMs;
  const emailSubject = `email:${email}`;
  const addressSubject = `addr:${input.address}`;
  // The attempt is counted before its password is checked, atomically: parallel attempts cannot
  // all pass the limit, and each costs a password hash only once it is counted.
  const claimed = await claimSignInAttempt(
    db,
    [
      { subject: emailSubject, limit: config.signInLimit.perEmail },
      { subject: addressSubject, limit: config.signInLimit.perAddress },
    ],
    now,
    since,
  );
  if (!claimed) throw new AppError('RATE_LIMITED', SIGN_IN_LIMITED);
  const row = email ? await findUserByEmail(db, email) : undefined;
  // An unknown email costs the same hash as a known one; at most a few hashes run at once.
  const ok = await passwordChecks.run(async () =>
    verifyPassword(input.password, row?.password_hash ?? (await decoyHash(config.passwordCost))),
  );
  if (!row || !ok) throw new AppError('UNAUTHORIZED', SIGN_IN_REFUSED);
  // A hash made at an older (lower) cost is remade at today's, now that the password is at hand.
  if (needsRehash(row.password_hash, config.passwordCost)) {
    const raised = await passwordChecks.run(() => hashPassword(input.password, config.passwordCost));
    await setPasswordHash(db, row.id, raised, now);
  }
  await clearSignInFailures(db, emailSubject);
  await forgetSignInAttempt(db, addressSubject, now);
  // This person's sessions left idle too long (closed browsers, never signed out), or past their
  // maximum age, go now.
  await deleteIdleSessions(db, row.id, {
    seenBefore: now - config.sessionIdleMs,
    createdBefore: now - config.sessionMaxMs,
  });
  return openSession(db, clock, toUser(row));
}

/** A new session for a person whose credentials were just checked (or just set: an accepted invitation). */
export async function openSession(
  db: Kysely<DB>,
  clock: Clock,
  user: User,
): Promise<{ token: string; session: Session }> {
  const now = clock.now();
  const token = randomBytes(32).toString('base64url');
  await insertSession(db, { tokenHash: tokenHash(token), userId: user.id, orgId: user.orgId, at: now });
  await setLastSignIn(db, user.id, now);
  const org = await getOrganization(db, user.orgId);
  return { token, session: { user, org, csrfToken: csrfTokenOf(token) } };
}

/**
 * The live session of a token, or undefined (unknown, ended, idle too long or past its maximum age
 * since sign-in: then removed).
 */
export async function sessionOf(
  db: Kysely<DB>,
  clock: Clock,
  ages: Pick<DashboardConfig, 'sessionIdleMs' | 'sessionMaxMs'>,
  token: string | undefined,
): Promise<Session | undefined> {
  const idleMs = ages.sessionIdleMs;
  if (!token || token.length > 100) return undefined;
  const hash = tokenHash(token);
  const row = await findSessionWithUser(db, hash);
  if (!row || row.session_org_id !== row.org_id) return undefined;
  const now = clock.now();
  if (now - row.last_seen_at > idleMs || now - row.session_created_at > ages.sessionMaxMs) {
    await deleteSession(db, hash);
    return undefined;
  }
  // One write a minute at most (or sooner for short idle times), not one per page.
  if (now - row.last_seen_at > Math.min(60_000, idleMs / 10)) {
    await touchSession(db, hash, now);
  }
  const org = await getOrganization(db, row.org_id);
  const { last_seen_at: _seen, session_org_id: _org, session_created_at: _created, ...user } = row;
  return { user: toUser(user), org, csrfToken: csrfTokenOf(token) };
}

/**
 * Whether the session of a token is still live, without counting this as a use (an inbox page
 * left open re-checks its stream's session and must not keep it from ending when idle).
 */
export async function sessionStillLive(
  db: Kysely<DB>,
  clock: Clock,
  ages: Pick<DashboardConfig, 'sessionIdleMs' | 'sessionMaxMs'>,
  token: string | undefined,
): Promise<boolean> {
  if (!token || token.length > 100) return false;
  const row = await findSessionWithUser(db, tokenHash(token));
  if (!row || row.session_org_id !== row.org_id) return false;
  const now = clock.now();
  return now - row.last_seen_at <= ages.sessionIdleMs && now - row.session_created_at <= ages.sessionMaxMs;
}

export async function endSession(db: Kysely<DB>, token: string | undefined): Promise<void> {
  if (!token) return;
  await deleteSession(db, tokenHash(token));
}
