import type { Kysely } from 'kysely';
import { inTransaction, recordAudit } from '../audit/audit.service.js';
import { isUniqueViolation } from '../db/db-errors.js';
import type { DB } from '../db/schema.js';
import { getOrganization } from '../orgs/org.service.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import type { Role, UserTable } from './dashboard.tables.js';
import { hashPassword, MIN_PASSWORD_LENGTH } from './password.js';
import { deleteSessionsOfUser } from './session.repository.js';
import { deleteUser, findUserRow, insertUser, listUserRows, setPasswordHash } from './user.repository.js';

export type { Role };
export const ROLES: readonly Role[] = ['owner', 'admin', 'member'];

/** A person of the dashboard; never the password hash. */
export interface User {
  id: string;
  orgId: string;
  email: string;
  role: Role;
  createdAt: number;
}

export const toUser = (row: UserTable): User => ({
  id: row.id,
  orgId: row.org_id,
  email: row.email,
  role: row.role,
  createdAt: row.created_at,
});

/** Who may do what: owners and admins manage; members only look; only owners change the plan. */
export const canManage = (role: Role): boolean => role === 'owner' || role === 'admin';
export const canChangePlan = (role: Role): boolean => role === 'owner';

export function normalizeEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (email.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) {
    throw new AppError('INVALID_BODY', `"${raw.slice(0, 80)}" is not an email address`);
  }
  return email;
}

function checkRole(role: string): Role {
  if (!(ROLES as readonly string[]).includes(role)) {
    throw new AppError('INVALID_BODY', `role must be owner, admin or member, got "${role}"`);
  }
  return role as Role;
}

function checkPassword(password: string): string {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new AppError('INVALID_BODY', `a password needs at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  if (password.length > 1024) throw new AppError('INVALID_BODY', 'a password is at most 1024 characters');
  return password;
}

export async function createUser(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; email: string; role: string; password: string; actor: string },
  /** The scrypt cost (config.dashboard.passwordCost); the default's otherwise. */
  passwordCost?: number,
): Promise<User> {
  const org = await getOrganization(db, input.orgId);
  const email = normalizeEmail(input.email);
  const role = checkRole(input.role);
  const passwordHash = await hashPassword(checkPassword(input.password), passwordCost);
  const now = clock.now();
  const row: UserTable = {
    id: newId('usr'),
    org_id: org.id,
    email,
    role,
    password_hash: passwordHash,
    created_at: now,
    updated_at: now,
  };
  try {
    await inTransaction(db, async (trx) => {
      await insertUser(trx, row);
      await recordAudit(trx, {
        orgId: org.id,
        actor: input.actor,
        action: 'user.created',
        targetType: 'user',
        targetId: row.id,
        details: { email, role },
        at: now,
      });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError('CONFLICT', `a user with email ${email} already exists`);
    throw err;
  }
  return toUser(row);
}

export async function listUsers(db: Kysely<DB>, orgId: string): Promise<User[]> {
  await getOrganization(db, orgId);
  return (await listUserRows(db, orgId)).map(toUser);
}

export type UserRef = { email: string } | { id: string };

async function findUser(db: Kysely<DB>, orgId: string, ref: UserRef): Promise<UserTable> {
  const row = await findUserRow(db, orgId, 'id' in ref ? ref : { email: ref.email.trim().toLowerCase() });
  if (!row) {
    const what = 'id' in ref ? ref.id : ref.email;
    throw new AppError('NOT_FOUND', `no user "${what.slice(0, 254)}" in organization ${orgId}`);
  }
  return row;
}

/** Removes a person; their sessions end with them. */
export async function removeUser(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  ref: UserRef,
  actor: string,
): Promise<User> {
  const row = await findUser(db, orgId, ref);
  await inTransaction(db, async (trx) => {
    await deleteSessionsOfUser(trx, row.id);
    await deleteUser(trx, orgId, row.id);
    await recordAudit(trx, {
      orgId,
      actor,
      action: 'user.removed',
      targetType: 'user',
      targetId: row.id,
      details: { email: row.email, role: row.role },
      at: clock.now(),
    });
  });
  return toUser(row);
}

/** Sets a new password and ends every session of that person. */
export async function setUserPassword(
  db: Kysely<DB>,
  clock: Clock,
  orgId: string,
  ref: UserRef,
  password: string,
  actor: string,
  passwordCost?: number,
): Promise<User> {
  const row = await findUser(db, orgId, ref);
  const passwordHash = await hashPassword(checkPassword(password), passwordCost);
  const now = clock.now();
  await inTransaction(db, async (trx) => {
    await setPasswordHash(trx, row.id, passwordHash, now);
    await deleteSessionsOfUser(trx, row.id);
    await recordAudit(trx, {
      orgId,
      actor,
      action: 'user.password_changed',
      targetType: 'user',
      targetId: row.id,
      details: { email: row.email },
      at: now,
    });
  });
  return toUser(row);
}
