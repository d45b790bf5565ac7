import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DashboardConfig } from '../config.js';
import type { DB } from '../db/schema.js';
import { getOrganization, type Organization } from '../orgs/org.service.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { decoyHash, verifyPassword } from './password.js';
import { toUser, type User } from './user.service.js';

/** The one answer to a wrong email and to a wrong password alike. */
export const SIGN_IN_REFUSED = 'Wrong email or password.';
export const SIGN_IN_LIMITED = 'Too many failed sign-ins. Wait 15 minutes and try again.';

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

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
}

async function failures(db: Kysely<DB>, subject: string, since: number): Promise<number> {
  const row = await db
    .selectFrom('sign_in_failures')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('subject', '=', subject)
    .where('at', '>', since)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
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
  if (
    (await failures(db, emailSubject, since)) >= config.signInLimit.perEmail ||
    (await failures(db, addressSubject, since)) >= config.signInLimit.perAddress
  ) {
    throw new AppError('RATE_LIMITED', SIGN_IN_LIMITED);
  }
  const row = email
    ? await db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst()
    : undefined;
  // An unknown email costs the same hash as a known one.
  const ok = await verifyPassword(input.password, row?.password_hash ?? (await decoyHash()));
  if (!row || !ok) {
    await db
      .insertInto('sign_in_failures')
      .values([
        { subject: emailSubject, at: now },
        { subject: addressSubject, at: now },
      ])
      .execute();
    await db
      .deleteFrom('sign_in_failures')
      .where('subject', 'in', [emailSubject, addressSubject])
      .where('at', '<=', since)
      .execute();
    throw new AppError('UNAUTHORIZED', SIGN_IN_REFUSED);
  }
  await db.deleteFrom('sign_in_failures').where('subject', '=', emailSubject).execute();
  // This person's sessions left idle too long (closed browsers, never signed out) go now.
  await db
    .deleteFrom('dashboard_sessions')
    .where('user_id', '=', row.id)
    .where('last_seen_at', '<', now - config.sessionIdleMs)
    .execute();
  const token = randomBytes(32).toString('base64url');
  await db
    .insertInto('dashboard_sessions')
    .values({ token_hash: sha256(token), user_id: row.id, org_id: row.org_id, created_at: now, last_seen_at: now })
    .execute();
  const org = await getOrganization(db, row.org_id);
  return { token, session: { user: toUser(row), org, csrfToken: csrfTokenOf(token) } };
}

/** The live session of a token, or undefined (unknown, ended, or idle too long: then removed). */
export async function sessionOf(
  db: Kysely<DB>,
  clock: Clock,
  idleMs: number,
  token: string | undefined,
): Promise<Session | undefined> {
  if (!token || token.length > 100) return undefined;
  const tokenHash = sha256(token);
  const row = await db
    .selectFrom('dashboard_sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .selectAll('u')
    .select(['s.last_seen_at', 's.org_id as session_org_id'])
    .where('s.token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (!row || row.session_org_id !== row.org_id) return undefined;
  const now = clock.now();
  if (now - row.last_seen_at > idleMs) {
    await db.deleteFrom('dashboard_sessions').where('token_hash', '=', tokenHash).execute();
    return undefined;
  }
  // One write a minute at most (or sooner for short idle times), not one per page.
  if (now - row.last_seen_at > Math.min(60_000, idleMs / 10)) {
    await db.updateTable('dashboard_sessions').set({ last_seen_at: now }).where('token_hash', '=', tokenHash).execute();
  }
  const org = await getOrganization(db, row.org_id);
  const { last_seen_at: _seen, session_org_id: _org, ...user } = row;
  return { user: toUser(user), org, csrfToken: csrfTokenOf(token) };
}

export async function endSession(db: Kysely<DB>, token: string | undefined): Promise<void> {
  if (!token) return;
  await db.deleteFrom('dashboard_sessions').where('token_hash', '=', sha256(token)).execute();
}
