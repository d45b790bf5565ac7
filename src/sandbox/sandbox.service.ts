import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { assertAgentAllowed, type Principal, targetAgentId } from '../auth/index.js';
import type { AppContext } from '../context.js';
import type { DB } from '../db/schema.js';
import { inboundOutcomeOf } from '../messaging/webhook.service.js';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';
import { parseInternationalPhone } from '../shared/phone.js';
import type { Sandbox } from './sandbox.js';
import { findAgentNumberRow } from './sandbox.repository.js';
import { InboundKindError, inboundMessageOf, type SandboxInboundMessage } from './sandbox-inbound-kinds.js';

/** How long the helper waits for Parley to apply the webhook the sandbox delivered. */
export const INBOUND_APPLY_TIMEOUT_MS = 10_000;

export interface SimulateInboundInput {
  readonly convId?: string | undefined;
  readonly from: string;
  readonly text?: string | undefined;
  readonly name?: string | undefined;
  /** The other kinds (`image`, `location`, `buttonReply`...): see sandbox-inbound-kinds.ts. */
  readonly [kind: string]: unknown;
}

/** An agent and its messaging number; with `orgId`, only an agent of that organization. */
export async function findAgentNumber(db: Kysely<DB>, agentId: string, orgId?: string) {
  return findAgentNumberRow(db, agentId, orgId);
}

/**
 * Polls Parley's database until the inbound message is stored (its window is opened in the same
 * transaction), or its webhook was kept as failed or unrouted, or the time is up.
 */
export async function waitForInbound(
  db: Kysely<DB>,
  messageId: string,
  timeoutMs: number,
): Promise<'applied' | 'failed' | 'unrouted' | 'pending'> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const outcome = await inboundOutcomeOf(db, messageId);
    if (outcome) return outcome;
    if (Date.now() >= deadline) return 'pending';
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The verb of POST /api/sandbox/inbound: the sandbox delivers a signed inbound message webhook
 * from `from` to the agent's number, and this answers once Parley has applied that very webhook
 * (not once the whole queue drained), so the window is open on success. Same agent rules as a send.
 */
export async function simulateInbound(
  ctx: AppContext,
  sandbox: Sandbox,
  principal: Principal,
  input: SimulateInboundInput,
): Promise<{ success: true; messageId: string }> {
  const phone = parseInternationalPhone(input.from);
  if (!phone.ok) {
    throw new AppError(
      'INVALID_BODY',
      phone.problem === 'extension'
        ? `'from' must be a phone number without an extension; got '${clip(input.from)}'.`
        : `'from' must be a valid phone number in international format, such as +14155550100; got '${clip(input.from)}'.`,
    );
  }
  let message: SandboxInboundMessage;
  try {
    message = inboundMessageOf(input);
  } catch (err) {
    if (err instanceof InboundKindError) throw new AppError('INVALID_BODY', err.message);
    throw err;
  }
  const agentId = targetAgentId(principal, input.convId);
  if (agentId === undefined) throw new AppError('INVALID_BODY', "'convId' is required with an organization key.");
  assertAgentAllowed(principal, agentId);
  const row = await findAgentNumber(ctx.db, agentId, principal.orgId);
  if (!row) throw new AppError('NOT_FOUND', `No agent with ID '${clip(agentId, 64)}' in this organization.`);
  if (!row.phone || !row.phone_number_id) {
    throw new AppError('INVALID_BODY', `Agent '${clip(agentId, 64)}' has no messaging number assigned.`);
  }

  const messageId = `wamid.${randomBytes(24).toString('base64url')}`;
  // Registered before the webhook can arrive.
  const applied = ctx.messaging.webhooks.waitForInbound(messageId, INBOUND_APPLY_TIMEOUT_MS);
  try {
    await sandbox.deliverInbound({
      phoneNumberId: row.phone_number_id,
      displayPhoneNumber: row.phone,
      from: phone.e164,
      message,
      messageId,
      ...(input.name !== undefined ? { name: input.name } : {}),
    });
  } catch (err) {
    ctx.logger.warn({ err }, 'sandbox inbound delivery failed');
    throw new AppError('PROVIDER_UNAVAILABLE', 'The sandbox could not deliver the inbound message webhook.');
  }
  const outcome = await applied;
  if (!outcome.ok) {
    const why =
      outcome.reason === 'timeout'
        ? `was not applied within ${INBOUND_APPLY_TIMEOUT_MS / 1000} seconds`
        : outcome.reason === 'unknown number'
          ? 'names a phone number ID no number has (kept as an unrouted webhook)'
          : outcome.retrying
            ? 'could not be applied; Parley retries it in the background and keeps it as a failed webhook if it keeps failing'
            : 'could not be applied; it is kept as a failed webhook (parley webhooks failed)';
    throw new AppError(
      'PROVIDER_UNAVAILABLE',
      `The sandbox delivered inbound message ${messageId}, but its webhook ${why}, so the 24-hour window may not be open.`,
    );
  }
  return { success: true, messageId };
}
