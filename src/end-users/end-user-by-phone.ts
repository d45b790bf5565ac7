import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { AppError, isAppError } from '../shared/errors.js';
import { deleteEndUserRow, findByPhone } from './end-user.repository.js';
import { createEndUser } from './end-user.service.js';

/** Fields a caller may give for a record made on the fly (a trigger, a campaign recipient). */
export interface EndUserFields {
  readonly name?: string | undefined;
  readonly email?: string | undefined;
  readonly tags?: readonly string[] | undefined;
}

/**
 * The organization's end user with this phone, or a new one of `origin` filled with `fields`. An
 * existing record is never changed by `fields`. Two callers racing for one phone end on one
 * record: the loser of the insert reads the winner's.
 */
export async function findOrCreateEndUserByPhone(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; phone: string; origin: 'manual' | 'imported'; fields?: EndUserFields | undefined },
): Promise<{ id: string; name: string | null; email: string | null; phone: string; created: boolean }> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const existing = await findByPhone(db, input.orgId, input.phone);
    if (existing) {
      return { id: existing.id, name: existing.name, email: existing.email, phone: input.phone, created: false };
    }
    const fields = input.fields ?? {};
    try {
      const made = await createEndUser(db, clock, input.orgId, {
        origin: input.origin,
        phone: input.phone,
        ...(fields.name !== undefined ? { name: fields.name } : {}),
        ...(fields.email !== undefined ? { email: fields.email } : {}),
        ...(fields.tags !== undefined ? { tags: [...fields.tags] } : {}),
      });
      return { id: made._id, name: made.name ?? null, email: made.email ?? null, phone: input.phone, created: true };
    } catch (err) {
      if (!isAppError(err)) throw err;
      if (err.code === 'DUPLICATE_ENDUSER') {
        const field = (err.details as { field?: string } | undefined)?.field;
        if (field === 'phone') continue; // created by someone else meanwhile: read it
        throw new AppError('INVALID_BODY', `'endUser.email' already belongs to another end user.`);
      }
      if (err.code === 'INVALID_BODY') {
        throw new AppError('INVALID_BODY', `'endUser' is not valid: ${err.message}`);
      }
      throw err;
    }
  }
  throw new AppError('SERVICE_UNAVAILABLE', 'The end user could not be recorded; retry.');
}

/** Undoes a record made on the fly for a send that then failed for certain. */
export async function deleteEndUserMadeForSend(db: Kysely<DB>, orgId: string, id: string): Promise<void> {
  await deleteEndUserRow(db, orgId, id);
}
