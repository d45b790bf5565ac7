import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type Agent, createAgent } from '../agents/agent.service.js';
import { isUniqueViolation } from '../db/db-errors.js';
import type { DB } from '../db/schema.js';
import type { MessagingNumberTable } from '../messaging/messaging.tables.js';
import { getOrganization } from '../orgs/org.service.js';
import { clip } from '../shared/clip.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { toE164 } from '../shared/phone.js';
import {
  findNumberIdByPhone,
  findNumberOwnerByPhone,
  findNumberRow,
  findNumberRowByPhone,
  findPhoneByPhoneNumberId,
  insertNumber,
  listNumberRows,
  setAgentNumber,
} from './number.repository.js';
import type { SecretBox } from './secret-box.js';

export { toE164 };

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

/** Sandbox numbers get a made-up numeric provider ID, as real ones are numeric too. */
const sandboxPhoneNumberId = () =>
  `1${String(randomInt(0, 1e9)).padStart(9, '0')}${String(randomInt(0, 1e5)).padStart(5, '0')}`;

export interface AddNumberInput {
  orgId: string;
  phone: string;
  provider?: string;
  phoneNumberId?: string;
  accessToken?: string;
}

/**
 * Checks everything about a new number that does not need the database, and returns its row
 * values: the E.164 phone and the provider. A phone number ID or an access token belongs to a
 * cloud number only; given without `provider: cloud` they are refused, not silently dropped.
 */
function checkNewNumber(input: AddNumberInput): { phone: string; provider: NumberProvider } {
  const phone = toE164(input.phone);
  if (!phone) {
    throw new AppError(
      'INVALID_BODY',
      `"${clip(input.phone, 64)}" is not a phone number in international format (+E.164)`,
    );
  }
  const provider = input.provider ?? 'sandbox';
  if (provider !== 'sandbox' && provider !== 'cloud') {
    throw new AppError('INVALID_BODY', `provider must be sandbox or cloud, got "${clip(provider, 64)}"`);
  }
  if (provider === 'cloud') {
    if (!input.phoneNumberId || !/^\d{1,32}$/.test(input.phoneNumberId)) {
      throw new AppError('INVALID_BODY', 'a cloud number needs its numeric phone number ID (--phone-number-id)');
    }
    if (!input.accessToken)
      throw new AppError('INVALID_BODY', 'a cloud number needs an access token (--access-token-env)');
  } else if (input.phoneNumberId !== undefined || input.accessToken !== undefined) {
    throw new AppError(
      'INVALID_BODY',
      'a phone number ID and an access token (--phone-number-id, --access-token-env) are only for a cloud number: add --provider cloud',
    );
  }
  return { phone, provider };
}

export async function addNumber(
  db: Kysely<DB>,
  clock: Clock,
  box: SecretBox,
  input: AddNumberInput,
): Promise<MessagingNumber> {
  const { phone, provider } = checkNewNumber(input);
  await getOrganization(db, input.orgId);
  const existing = await findNumberOwnerByPhone(db, phone);
  if (existing) {
    throw new AppError(
      'INVALID_BODY',
      existing.org_id === input.orgId
        ? `the number ${phone} is already registered in this organization`
        : `the number ${phone} is registered to another organization`,
    );
  }
  const phoneNumberId = provider === 'cloud' && input.phoneNumberId ? input.phoneNumberId : sandboxPhoneNumberId();
  const taken = await findPhoneByPhoneNumberId(db, phoneNumberId);
  if (taken) {
    throw new AppError(
      'INVALID_BODY',
      `the phone number ID ${phoneNumberId} is already registered (number ${taken.phone})`,
    );
  }
  const row: MessagingNumberTable = {
    id: newId('num'),
    org_id: input.orgId,
    phone,
    provider,
    phone_number_id: phoneNumberId,
    access_token_enc: input.accessToken ? box.seal(input.accessToken) : null,
    created_at: clock.now(),
  };
  try {
    await insertNumber(db, row);
  } catch (err) {
    // Another writer registered the same phone or phone number ID between the checks and the insert.
    if (isUniqueViolation(err)) {
      throw new AppError(
        'INVALID_BODY',
        `the number ${phone} or its phone number ID ${phoneNumberId} is already registered`,
      );
    }
    throw err;
  }
  return toMessagingNumber(row);
}

/**
 * `agent create --number`: an agent and its number in one transaction, so that a refusal (a phone
 * that is not valid, or one registered to another organization) leaves nothing behind. The
 * organization's number with that phone is used, or a new sandbox number is added.
 */
export async function createAgentWithNumber(
  db: Kysely<DB>,
  clock: Clock,
  box: SecretBox,
  input: { orgId: string; name: string; phone: string },
): Promise<{ agent: Agent; number: MessagingNumber }> {
  const phone = toE164(input.phone);
  if (!phone) {
    throw new AppError(
      'INVALID_BODY',
      `"${clip(input.phone, 64)}" is not a phone number in international format (+E.164)`,
    );
  }
  return db.transaction().execute(async (trx) => {
    const number =
      (await findNumberByPhone(trx, input.orgId, phone)) ??
      (await addNumber(trx, clock, box, { orgId: input.orgId, phone }));
    const agent = await createAgent(trx, clock, { orgId: input.orgId, name: input.name, numberId: number.id });
    return { agent, number };
  });
}

export async function findNumberByPhone(
  db: Kysely<DB>,
  orgId: string,
  phone: string,
): Promise<MessagingNumber | undefined> {
  const e164 = toE164(phone) ?? phone;
  const row = await findNumberRowByPhone(db, orgId, e164);
  return row ? toMessagingNumber(row) : undefined;
}

/** The numbers of an organization, oldest first; an unknown organization is an error, not an empty list. */
export async function listNumbers(db: Kysely<DB>, orgId: string): Promise<MessagingNumber[]> {
  await getOrganization(db, orgId);
  const rows = await listNumberRows(db, orgId);
  return rows.map(toMessagingNumber);
}

/** The number and its decrypted access token (null for sandbox numbers), for a send. */
export async function loadSendingNumber(
  db: Kysely<DB>,
  box: SecretBox,
  orgId: string,
  numberId: string,
): Promise<(MessagingNumber & { accessToken: string | null }) | undefined> {
  const row = await findNumberRow(db, orgId, numberId);
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
  const updated = await setAgentNumber(db, orgId, agentId, number.id);
  if (updated === 0) throw new AppError('NOT_FOUND', `unknown agent "${agentId}"`);
  return number;
}

/** True when some organization has a number with this phone (E.164, as stored). */
export async function isPhoneRegistered(db: Kysely<DB>, phone: string): Promise<boolean> {
  return (await findNumberIdByPhone(db, phone)) !== undefined;
}
