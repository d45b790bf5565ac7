import { type Static, Type } from '@sinclair/typebox';
import { assertAgentAllowed, type KeyEpochConfirmer, type Principal, readConfirmingKey } from '../auth/index.js';
import type { AppContext } from '../context.js';
import { AppError } from '../shared/errors.js';
import { findMessage, findMessageWithKeyEpoch } from './message.fast.js';
import { type MessageRead, type MessageStatus, STATUS_RANK, type StatusRow } from './message.model.js';

export const StatusEntry = Type.Object(
  {
    status: Type.String({ description: 'sent, delivered, read or failed.' }),
    timestamp: Type.Number({ description: "The provider's time of the status, ms since epoch." }),
    receivedAt: Type.Number({ description: 'When Parley received it, ms since epoch.' }),
    error: Type.Optional(Type.Object({ code: Type.Union([Type.Number(), Type.Null()]), message: Type.String() })),
  },
  { title: 'MessageStatus' },
);

export const MessageResponse = Type.Object(
  {
    success: Type.Literal(true),
    message: Type.Object(
      {
        messageId: Type.Union([Type.String(), Type.Null()], { description: "The provider's message ID." }),
        id: Type.String({ description: "Parley's own ID of the message (sent to the provider as callback data)." }),
        channel: Type.Literal('msgapp'),
        convId: Type.String({ description: 'The agent whose number sent it.' }),
        to: Type.String({ description: 'Recipient, E.164.' }),
        type: Type.Union([Type.Literal('template'), Type.Literal('message')]),
        templateName: Type.Union([Type.String(), Type.Null()]),
        status: Type.String({
          description:
            'Latest status: accepted, sent, delivered, read or failed (only ever moves forward; failed is final); ' +
            'rejected or unconfirmed when the send itself failed; pending while the send awaits the provider, or ' +
            'when the provider accepted it but recording that failed, until its first status arrives.',
        }),
        error: Type.Optional(Type.Object({ code: Type.Union([Type.Number(), Type.Null()]), message: Type.String() })),
        createdAt: Type.Number(),
        updatedAt: Type.Number(),
        statuses: Type.Array(StatusEntry, { description: 'Every status received, oldest first, once each.' }),
      },
      { title: 'Message' },
    ),
  },
  { title: 'MessageResponse' },
);
export type MessageResponse = Static<typeof MessageResponse>;

const errorOf = (code: number | null, message: string | null) => (message !== null ? { error: { code, message } } : {});

/** The answer of `GET /api/messages/<id>`: the message, its statuses oldest first. */
export function toMessageResponse(message: MessageRead, statuses: readonly StatusRow[]): MessageResponse {
  const rank = (s: string) => STATUS_RANK[s as MessageStatus] ?? 0;
  const ordered = [...statuses].sort((a, b) => a.occurred_at - b.occurred_at || rank(a.status) - rank(b.status));
  return {
    success: true,
    message: {
      messageId: message.provider_message_id,
      id: message.id,
      channel: 'msgapp',
      convId: message.agent_id,
      to: message.to_phone,
      type: message.type,
      templateName: message.template_name,
      status: message.status,
      ...errorOf(message.error_code, message.error_message),
      createdAt: Number(message.created_at),
      updatedAt: Number(message.updated_at),
      statuses: ordered.map((s) => ({
        status: s.status,
        timestamp: Number(s.occurred_at),
        receivedAt: Number(s.received_at),
        ...errorOf(s.error_code, s.error_message),
      })),
    },
  };
}

/**
 * A message of the caller's organization; an agent key sees only its own agent's messages.
 * `confirmKey`: given when the key still awaits the epoch this read returns (src/auth/key-epoch.ts).
 */
export async function getMessage(
  ctx: AppContext,
  principal: () => Principal,
  messageId: string,
  confirmKey?: KeyEpochConfirmer,
): Promise<MessageResponse> {
  // The key is confirmed before anything is answered, a 404 included.
  const found = await readConfirmingKey(
    confirmKey,
    () => findMessage(ctx.db, principal().orgId, messageId),
    () =>
      findMessageWithKeyEpoch(ctx.db, { orgId: principal().orgId, id: messageId }).then((read) => ({
        row: read.found,
        epoch: read.epoch,
      })),
  );
  if (!found) throw new AppError('NOT_FOUND', `No message with ID '${messageId}' in this organization.`);
  assertAgentAllowed(principal(), found.message.agent_id);
  return toMessageResponse(found.message, found.statuses);
}
