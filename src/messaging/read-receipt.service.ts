/**
 * `POST /api/messages/<providerMessageId>/read`: an inbound message marked read at the provider
 * (the user sees blue ticks) and, when asked, the typing indicator shown. The agent rules of a
 * send: an agent key reaches only the messages of its own agent's conversations (another's is
 * absent, 404); a message the organization sent is 400.
 */
import type { Kysely } from 'kysely';
import type { Principal } from '../auth/index.js';
import type { DB } from '../db/schema.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import type { ProviderRequests } from './provider-requests.js';
import { findInboundForRead, isOutboundMessage } from './read-receipt.repository.js';

export interface ReadReceiptDeps {
  readonly db: Kysely<DB>;
  readonly messaging: {
    readonly providerRequests: Pick<ProviderRequests, 'markRead'>;
    readonly secrets: { open(sealed: string): string };
  };
}

export interface ReadReceiptResult {
  readonly success: true;
  readonly messageId: string;
  readonly typing: boolean;
}

export async function markMessageRead(
  deps: ReadReceiptDeps,
  principal: Principal,
  messageId: string,
  typing: boolean,
): Promise<ReadReceiptResult> {
  const absent = new AppError(
    'NOT_FOUND',
    `No received message with ID '${clip(messageId, 100)}' in this organization.`,
  );
  const found = await findInboundForRead(deps.db, principal.orgId, messageId);
  if (!found) {
    if (await isOutboundMessage(deps.db, principal.orgId, messageId)) {
      throw new AppError(
        'INVALID_BODY',
        `'${clip(messageId, 100)}' is a message this organization sent; only a received message can be marked read.`,
      );
    }
    throw absent;
  }
  if (principal.scope === 'agent' && found.agent_id !== principal.agentId) throw absent;
  const result = await deps.messaging.providerRequests.markRead({
    phoneNumberId: found.phone_number_id,
    accessToken: found.access_token_enc ? deps.messaging.secrets.open(found.access_token_enc) : 'sandbox',
    messageId,
    typing,
  });
  if (!result.ok) {
    const why = `${result.code !== null ? ` with code ${result.code}` : ''}${result.message ? ` (${clip(result.message, 300)})` : ''}`;
    if (result.kind === 'rejected' || result.kind === 'throttled') {
      throw new AppError('PROVIDER_REJECTED', `The provider refused to mark the message read${why}.`);
    }
    throw new AppError('PROVIDER_UNAVAILABLE', `The messaging provider could not mark the message read${why}.`);
  }
  return { success: true, messageId, typing };
}
