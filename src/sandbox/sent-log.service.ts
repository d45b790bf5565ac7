import type { Kysely } from 'kysely';
import { assertAgentAllowed, type Principal, targetAgentId } from '../auth/index.js';
import type { DB } from '../db/schema.js';
import { listNumbers } from '../numbers/number.service.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { parseInternationalPhone } from '../shared/phone.js';
import { findAgentNumberRow } from './sandbox.repository.js';
import type { SentEntry, SentQuery } from './sandbox-sent-log.js';
import type { SandboxSentItem, SandboxSentList, SandboxSentQuery } from './sent-log.schemas.js';

/** The sending numbers a caller may see the log of: phone number ID to the number (E.164). */
export type VisibleNumbers = ReadonlyMap<string, string>;

/**
 * The numbers whose log a key may read: an agent's (an agent key's own, or the one named), or every
 * number of the organization. An agent without a number has an empty log; an unknown agent is 404.
 */
export async function visibleNumbers(
  db: Kysely<DB>,
  principal: Principal,
  agent: string | undefined,
): Promise<VisibleNumbers> {
  const agentId = targetAgentId(principal, agent);
  if (agentId === undefined) {
    const numbers = await listNumbers(db, principal.orgId);
    return new Map(numbers.map((n) => [n.phoneNumberId, n.phone]));
  }
  assertAgentAllowed(principal, agentId);
  const row = await findAgentNumberRow(db, agentId, principal.orgId);
  if (!row) throw new AppError('NOT_FOUND', `No agent with ID '${clip(agentId, 64)}' in this organization.`);
  return row.phone && row.phone_number_id ? new Map([[row.phone_number_id, row.phone]]) : new Map();
}

/** The query of the log from the request's filters; a `to` that is no phone number is a 400. */
export function sentQueryOf(numbers: VisibleNumbers, query: SandboxSentQuery): SentQuery {
  let to: string | undefined;
  if (query.to !== undefined) {
    const phone = parseInternationalPhone(query.to);
    if (!phone.ok) {
      throw new AppError(
        'INVALID_BODY',
        `Invalid query parameter: 'to' must be a phone number in international format, such as +14155550100; got '${clip(query.to)}'.`,
      );
    }
    to = phone.e164;
  }
  return { phoneNumberIds: [...numbers.keys()], to, limit: query.limit ?? 50 };
}

export function toSentItem(numbers: VisibleNumbers, entry: SentEntry): SandboxSentItem {
  return {
    messageId: entry.messageId,
    from: numbers.get(entry.phoneNumberId) ?? '',
    to: entry.to,
    type: entry.type,
    payload: JSON.parse(entry.payload) as Record<string, unknown>,
    receivedAt: entry.receivedAt,
    error: entry.error,
  };
}

/**
 * The verb of GET /api/sandbox/messages: what the sandbox was sent from the caller's numbers,
 * newest first. `read` is the log's reader (the in-process sandbox's, or its state file's).
 */
export async function listSandboxSent(
  db: Kysely<DB>,
  read: (query: SentQuery) => SentEntry[],
  principal: Principal,
  query: SandboxSentQuery,
): Promise<SandboxSentList> {
  const numbers = await visibleNumbers(db, principal, query.agent);
  const sentQuery = sentQueryOf(numbers, query);
  return { data: read(sentQuery).map((entry) => toSentItem(numbers, entry)) };
}
