import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { normalizePhone } from '../shared/phone.js';
import type { ChannelIdentifiers } from './end-user.model.js';
import {
  findByPhone,
  findEndUser,
  insertEndUserSkippingConflict,
  setChannelIdentifiersIf,
  touchInbound,
} from './end-user.repository.js';
import { MAX_NAME } from './end-user.schemas.js';
import type { EndUserTable } from './end-user.table.js';
import { invalid, VISIBLE } from './end-user-input.js';
import { searchKey } from './normalize.js';

/** Messaging's inbound hook: the end user a message comes from, found or recorded. */

/** A profile name as the provider gives it: NULs dropped, trimmed, cut to the limit; none if invisible. */
function inboundName(raw: string | undefined): { name: string; search: string } | undefined {
  if (raw === undefined) return undefined;
  const name = Array.from(raw.replaceAll('\u0000', '').trim()).slice(0, MAX_NAME).join('').trim();
  return VISIBLE.test(name) ? { name, search: searchKey(name) } : undefined;
}

/**
 * Called when an inbound message arrives: finds the organization's record for this phone or
 * creates one (origin inbound), fills the name from the profile when the record has none, and
 * moves lastSeenAt forward. Safe under concurrency: insert first, and on the unique conflict update.
 */
export async function recordInboundEndUser(
  db: Kysely<DB>,
  clock: Clock,
  input: { orgId: string; phone: string; name?: string; at: number },
): Promise<{ id: string; created: boolean }> {
  const phone = normalizePhone(input.phone);
  if (!phone) throw invalid('phone', `Invalid phone number "${input.phone}".`);
  const name = inboundName(input.name);
  const now = clock.now();
  for (let attempt = 0; attempt < 5; attempt++) {
    const row: EndUserTable = {
      id: newId('eu'),
      org_id: input.orgId,
      name: name?.name ?? null,
      name_search: name?.search ?? null,
      email: null,
      phone,
      tags: '[]',
      origin: 'inbound',
      channel_identifiers: JSON.stringify({ msgapp: phone }),
      consent: '{}',
      created_at: now,
      last_seen_at: input.at,
      updated_at: now,
    };
    if (await insertEndUserSkippingConflict(db, row)) return { id: row.id, created: true };
    const existing = await findByPhone(db, input.orgId, phone);
    if (!existing) continue; // deleted between the insert and the read: try again
    await touchInbound(db, existing.id, { at: input.at, now, name });
    let current = existing.channel_identifiers;
    for (let i = 0; i < 3; i++) {
      const ids: ChannelIdentifiers = JSON.parse(current) as ChannelIdentifiers;
      if (ids.msgapp) break;
      if (await setChannelIdentifiersIf(db, existing.id, current, JSON.stringify({ ...ids, msgapp: phone }))) break;
      const again = await findEndUser(db, input.orgId, existing.id);
      if (!again) break;
      current = again.channel_identifiers;
    }
    return { id: existing.id, created: false };
  }
  throw new AppError('CREATE_FAILED', 'The end user could not be recorded; retry.');
}
