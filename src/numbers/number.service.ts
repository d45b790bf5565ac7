import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { DB } from '../db/schema.js';
import type { MessagingNumberTable } from '../messaging/messaging.tables.js';
import { getOrganization } from '../orgs/org.service.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import type { SecretBox } from './secret-box.js';

export type NumberProvider = MessagingNumberTable['provider'];

/** A messaging number as the rest of the code sees it (never the access token). */
export interface MessagingNumber {
  id: string;
  orgId: string;
  phone: string;
  provider: NumberProvider;
  phoneNumberId: string;
  createdAt: number;
}

export const toMessagingNumber = (row: MessagingNumberTable): MessagingNumber => ({
  id: row.id,
  orgId: row.org_id,
  phone: row.phone,
  provider: row.provider,
  phoneNumberId: row.phone_number_id,
  createdAt: row.created_at,
});

/** A phone number in international format, normalized to E.164; undefined when it is not one. */
export function toE164(value: string): string | undefined {
  const trimmed = value.trim();
  if (!trimmed.startsWith('+')) return undefined;
  const parsed = parsePhoneNumberFromString(trimmed);
  return parsed?.isValid() ? parsed.number : undefined;
}

/** Sandbox numbers get a made-up numeric provider ID, as real ones are numeric too. */
const sandboxPhoneNumberId = () =>
  `1${String(randomInt(0, 1e9)).padStart(9, '0')}${String(randomInt(0, 1e5)).padStart(5, '0')}`;

export async function addNumber(
  db: Kysely<DB>,
  clock: Clock,
  box: SecretBox,
  input: { orgId: string; phone: string; provider?: string; phoneNumberId?: string; accessToken?: string },
): Promise<MessagingNumber> {
  await getOrganization(db, input.orgId);
  const phone = toE164(input.phone);
  if (!phone)
    throw new AppError('INVALID_BODY', `"${input.phone}" is not a phone number in international format (+E.164)`);
  const provider = input.provider ?? 'sandbox';
  if (provider !== 'sandbox' && provider !== 'cloud') {
    throw new AppError('INVALID_BODY', `provider must be sandbox or cloud, got "${provider}"`);
  }
  if (provider === 'cloud') {
    if (!input.phoneNumberId || !/^\d{1,32}$/.test(input.phoneNumberId)) {
      throw new AppError('INVALID_BODY', 'a cloud number needs its numeric phone number ID (--phone-number-id)');
    }
    if (!input.accessToken)
      throw new AppError('INVALID_BODY', 'a cloud number needs an access token (--access-token-env)');
  }
  const existing = await db.selectFrom('messaging_numbers').select('id').where('phone', '=', phone).executeTakeFirst();
  if (existing) throw new AppError('INVALID_BODY', `the number ${phone} is already registered`);
  const row: MessagingNumberTable = {
    id: newId('num'),
    org_id: input.orgId,
    phone,
    provider,
    phone_number_id: provider === 'cloud' && input.phoneNumberId ? input.phoneNumberId : sandboxPhoneNumberId(),
    access_token_enc: input.accessToken ? box.seal(input.accessToken) : null,
    created_at: clock.now(),
  };
  await db.insertInto('messaging_numbers').values(row).execute();
  return toMessagingNumber(row);
}

export async function findNumberByPhone(
  db: Kysely<DB>,
  orgId: string,
  phone: string,
): Promise<MessagingNumber | undefined> {
  const e164 = toE164(phone) ?? phone;
  const row = await db
    .selectFrom('messaging_numbers')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('phone', '=', e164)
    .executeTakeFirst();
  return row ? toMessagingNumber(row) : undefined;
}

export async function listNumbers(db: Kysely<DB>, orgId: string): Promise<MessagingNumber[]> {
  const rows = await db
    .selectFrom('messaging_numbers')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('created_at')
    .execute();
  return rows.map(toMessagingNumber);
}

/** The number and its decrypted access token (null for sandbox numbers), for a send. */
export async function loadSendingNumber(
  db: Kysely<DB>,
  box: SecretBox,
  orgId: string,
  numberId: string,
): Promise<(MessagingNumber & { accessToken: string | null }) | undefined> {
  const row = await db
    .selectFrom('messaging_numbers')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', numberId)
    .executeTakeFirst();
  if (!row) return undefined;
  return { ...toMessagingNumber(row), accessToken: row.access_token_enc ? box.open(row.access_token_enc) : null };
}

/** Assigns a number to an agent of the same organization. */
export async function assignNumber(
  db: Kysely<DB>,
  orgId: string,
  agentId: string,
  phone: string,
): Promise<MessagingNumber> {
  const number = await findNumberByPhone(db, orgId, phone);
  if (!number)
    throw new AppError(
      'NOT_FOUND',
      `no messaging number ${phone} in organization ${orgId}; add it with "parley number add"`,
    );
  const result = await db
    .updateTable('agents')
    .set({ number_id: number.id })
    .where('org_id', '=', orgId)
    .where('id', '=', agentId)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) throw new AppError('NOT_FOUND', `unknown agent "${agentId}"`);
  return number;
}
