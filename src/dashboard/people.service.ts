import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { inTransaction, recordAudit } from '../audit/audit.service.js';
import type { DB } from '../db/schema.js';
import { getOrganization, type Organization } from '../orgs/org.service.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import type { InvitationTable, Role } from './dashboard.tables.js';
import {
  claimInvitation,
  deleteOpenInvitation,
  findInvitationByHash,
  insertInvitation,
  listOpenInvitationRows,
} from './invitation.repository.js';
import { findUserByEmail } from './session.repository.js';
import { tokenHash } from './token-hash.js';
import { countOwners, findUserRow, listUserRows } from './user.repository.js';
import { canManage, createUser, normalizeEmail, ROLES, removeUser, type User } from './user.service.js';

/** An invitation link works this long, and once. */
export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export interface Person {
  readonly id: string;
  readonly email: string;
  readonly role: Role;
  readonly createdAt: number;
  readonly lastSignInAt: number | null;
}

export interface Invitation {
  readonly id: string;
  readonly orgId: string;
  readonly email: string;
  readonly role: Role;
  readonly invitedBy: string;
  readonly createdAt: number;
  readonly expiresAt: number;
}

/** Who is acting: the signed-in person. */
export type Actor = Pick<User, 'email' | 'role'>;

const toInvitation = (row: InvitationTable): Invitation => ({
  id: row.id,
  orgId: row.org_id,
  email: row.email,
  role: row.role,
  invitedBy: row.invited_by,
  createdAt: Number(row.created_at),
  expiresAt: Number(row.expires_at),
});

/** Owners grant any role; admins grant admin and member; members grant nothing. */
export function mayGrant(actor: Role, role: Role): boolean {
  return actor === 'owner' || (actor === 'admin' && role !== 'owner');
}

function mustManage(actor: Actor): void {
  if (!canManage(actor.role)) {
    throw new AppError('FORBIDDEN', 'Only owners and admins of the organization can make this change.');
  }
}

/** The organization's people (oldest first) and its invitations still open (newest first). */
export async function listPeople(
  db: Kysely<DB>,
  orgId: string,
  now: number,
): Promise<{ people: Person[]; invitations: Invitation[] }> {
  const [users, invitations] = await Promise.all([listUserRows(db, orgId), listOpenInvitationRows(db, orgId, now)]);
  return {
    people: users.map((u) => ({
      id: u.id,
      email: u.email,
      role: u.role,
      createdAt: Number(u.created_at),
      lastSignInAt: u.last_sign_in_at === null || u.last_sign_in_at === undefined ? null : Number(u.last_sign_in_at),
    })),
    invitations: invitations.map(toInvitation),
  };
}

/**
 * Invites a person with a role: resolves with the invitation and its link's token, shown this once
 * (only its hash is stored). There is no email here: the inviter passes the link on.
 */
export async function invitePerson(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; actor: Actor; email: string; role: string },
): Promise<{ invitation: Invitation; token: string }> {
  mustManage(input.actor);
  const email = normalizeEmail(input.email);
  if (!(ROLES as readonly string[]).includes(input.role)) {
    throw new AppError('INVALID_BODY', 'Choose a role: owner, admin or member.');
  }
  const role = input.role as Role;
  if (!mayGrant(input.actor.role, role)) {
    throw new AppError('FORBIDDEN', 'Only an owner can make someone an owner.');
  }
  if (await findUserByEmail(db, email)) {
    throw new AppError('CONFLICT', `${email} already signs in to a Parley dashboard.`);
  }
  const token = randomBytes(32).toString('base64url');
  const now = clock.now();
  const row: InvitationTable = {
    id: newId('inv'),
    org_id: input.orgId,
    email,
    role,
    token_hash: tokenHash(token),
    invited_by: input.actor.email,
    created_at: now,
    expires_at: now + INVITATION_TTL_MS,
    accepted_at: null,
  };
  await inTransaction(db, async (trx) => {
    await insertInvitation(trx, row);
    await recordAudit(trx, {
      orgId: input.orgId,
      actor: input.actor.email,
      action: 'user.invited',
      targetType: 'user',
      targetId: row.id,
      details: { email, role },
      at: now,
    });
  });
  return { invitation: toInvitation(row), token };
}

const INVITATION_GONE =
  'This invitation link does not work: it was used already, has expired, or was withdrawn. Ask for a new one.';

/** The open invitation of a link's token, with its organization; a used, expired or unknown link is a 404. */
export async function invitationByToken(
  db: Kysely<DB>,
  clock: Clock,
  token: string,
): Promise<{ invitation: Invitation; org: Organization }> {
  const row = token && token.length <= 100 ? await findInvitationByHash(db, tokenHash(token)) : undefined;
  if (!row || row.accepted_at !== null || Number(row.expires_at) <= clock.now()) {
    throw new AppError('NOT_FOUND', INVITATION_GONE);
  }
  return { invitation: toInvitation(row), org: await getOrganization(db, row.org_id) };
}

/** Uses the link: the person is made with the password they chose; the link then never works again. */
export async function acceptInvitation(db: Kysely<DB>, clock: Clock, token: string, password: string): Promise<User> {
  const { invitation } = await invitationByToken(db, clock, token);
  return inTransaction(db, async (trx) => {
    // Claimed first, in the same transaction: two uses at once make one person, and a refused password uses nothing.
    if (!(await claimInvitation(trx, invitation.id, clock.now()))) throw new AppError('NOT_FOUND', INVITATION_GONE);
    return createUser(trx, clock, {
      orgId: invitation.orgId,
      email: invitation.email,
      role: invitation.role,
      password,
      actor: `${invitation.email} (invited by ${invitation.invitedBy})`,
    });
  });
}

/** Withdraws an invitation not used yet. */
export async function withdrawInvitation(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; actor: Actor; id: string },
): Promise<void> {
  mustManage(input.actor);
  await inTransaction(db, async (trx) => {
    const withdrawn = await deleteOpenInvitation(trx, input.orgId, input.id);
    if (!withdrawn) throw new AppError('NOT_FOUND', 'No open invitation with this ID in your organization.');
    await recordAudit(trx, {
      orgId: input.orgId,
      actor: input.actor.email,
      action: 'user.invitation_withdrawn',
      targetType: 'user',
      targetId: input.id,
      details: { email: withdrawn.email },
      at: clock.now(),
    });
  });
}

/**
 * Removes a person (their sessions end with them). Only an owner removes an owner, and nobody
 * removes the organization's last owner.
 */
export async function removePerson(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; actor: Actor; userId: string },
): Promise<User> {
  mustManage(input.actor);
  return inTransaction(db, async (trx) => {
    const target = await findUserRow(trx, input.orgId, { id: input.userId });
    if (!target) throw new AppError('NOT_FOUND', 'No such person in your organization.');
    if (target.role === 'owner') {
      if (input.actor.role !== 'owner') throw new AppError('FORBIDDEN', 'Only an owner can remove an owner.');
      if ((await countOwners(trx, input.orgId)) <= 1) {
        throw new AppError('CONFLICT', `${target.email} is the last owner of the organization and cannot be removed.`);
      }
    }
    return removeUser(trx, clock, input.orgId, { id: target.id }, input.actor.email);
  });
}
