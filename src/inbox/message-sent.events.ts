import { type EventDeps, emitEvent, eventId } from '../events/event.service.js';
import type { ProviderSend } from '../messaging/index.js';

/**
 * `message.sent`: a message the agent's bot did not send went to the end user: a person's from the
 * inbox, or Parley's holding text. The bot and the organization's endpoints thus see the whole
 * thread. Its ID is derived from the message's, so a send recorded again raises it once.
 */
export function emitMessageSent(
  deps: EventDeps,
  message: {
    readonly orgId: string;
    readonly agentId: string;
    readonly conversationId: string;
    readonly endUserId: string;
    readonly to: string;
    /** Parley's message ID (`msg_...`). */
    readonly id: string;
    /** The provider's message ID. */
    readonly messageId: string;
    readonly content: ProviderSend['content'];
    readonly sentBy:
      | { readonly type: 'user'; readonly id: string; readonly name: string }
      | { readonly type: 'parley' };
    readonly at: number;
  },
): Promise<string[]> {
  const { content } = message;
  return emitEvent(deps, {
    id: eventId('message.sent', message.id),
    type: 'message.sent',
    orgId: message.orgId,
    agentId: message.agentId,
    at: message.at,
    data: {
      conversationId: message.conversationId,
      agentId: message.agentId,
      endUserId: message.endUserId,
      to: message.to,
      id: message.id,
      messageId: message.messageId,
      type: content.kind === 'text' ? 'message' : 'template',
      ...(content.kind === 'text'
        ? { text: content.text }
        : {
            template: {
              name: content.name,
              language: content.language,
              parameters: { body: content.body, header: content.header },
            },
          }),
      sentBy: message.sentBy,
    },
  });
}
