/** The number an agent sends from, kept in memory beside the keys. */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { KeyEpochConfirmer } from '../auth/index.js';
import { keyCacheOf } from '../auth/index.js';
import type { Database } from '../db/database.js';
import type { DB } from '../db/schema.js';
import type { ProviderSend } from '../messaging/index.js';
import { AppError } from '../shared/errors.js';
import { agentWithNumber, recipientReadStoresMessage } from './send.fast.js';

/** What an agent sends from: its number, with the access token opened; no number when unassigned. */
export interface Sender {
  readonly numberId: string | null;
  readonly phoneNumberId: string | null;
  readonly accessToken: string;
}

/** What finding a sender needs. */
export interface SenderDeps {
  readonly database: Database;
  readonly db: Kysely<DB>;
  readonly logger: Logger;
  readonly messaging: { readonly secrets: { open(sealed: string): string } };
}

/**
 * The agent's sending number, kept in memory beside the keys: every change to an agent's number or
 * to a number's identity or token bumps the key epoch (migration 0014-sender-epoch), which drops it.
 */
export function senderOf(deps: SenderDeps, orgId: string, agentId: string): Promise<Sender | undefined> {
  return keyCacheOf(deps.database).beside<Sender>(`sender\u0000${orgId}\u0000${agentId}`, async () => {
    const row = (await agentWithNumber(deps.db, [orgId, agentId])).rows[0];
    if (!row) return undefined;
    return {
      numberId: row.number_id,
      phoneNumberId: row.phone_number_id,
      accessToken: row.access_token_enc ? openToken(deps, row.access_token_enc) : 'sandbox',
    };
  });
}

/** A sealed access token that no longer opens (the secret key changed) is the server's problem, not the caller's. */
function openToken(deps: SenderDeps, sealed: string): string {
  try {
    return deps.messaging.secrets.open(sealed);
  } catch (err) {
    deps.logger.error({ err }, 'the access token of a messaging number cannot be opened with the secret key');
    throw new AppError(
      'PROVIDER_UNAVAILABLE',
      "This agent's messaging number has unusable credentials; an administrator must check the secret key or add the number again.",
    );
  }
}

/**
 * Whether the recipient read may store the message too (PostgreSQL, a template from a cached key):
 * the key's epoch and the agent's number, both from memory and both current under that epoch. The
 * statement then stores the message only if the database's epoch is still that one, so a key
 * revoked or a number changed meanwhile (on any node) stores nothing, and the send goes on as any
 * other: the key is authenticated again, the number read again.
 */
export async function storesWithRecipient(
  deps: SenderDeps,
  input: {
    readonly orgId: string;
    readonly agentId: string;
    readonly content: ProviderSend['content'];
    readonly confirmKey?: KeyEpochConfirmer | undefined;
  },
): Promise<{ epoch: number; sender: Sender & { numberId: string } } | undefined> {
  const epoch = input.confirmKey?.used;
  if (!recipientReadStoresMessage(deps.database) || input.content.kind !== 'template' || epoch === undefined) {
    return undefined;
  }
  const cache = keyCacheOf(deps.database);
  if (cache.current !== epoch) return undefined;
  const sender = await senderOf(deps, input.orgId, input.agentId);
  // Read under another epoch meanwhile (another request saw it move): not this path.
  if (!sender?.numberId || !sender.phoneNumberId || cache.current !== epoch) return undefined;
  return { epoch, sender: { ...sender, numberId: sender.numberId } };
}
