/**
 * Conversations' public surface for other features: the service's verbs, the events they raise,
 * joining an inbound message, and the send path's reads and writes of its recipient.
 */

export { emitConversationStarted, emitMessageReceived, type StartedEndUser } from './conversation.events.js';
export {
  findConversationWithKeyEpoch,
  findRecipient,
  findRecipientStoringMessage,
  type KnownRecipient,
  touchConversation,
} from './conversation.fast.js';
export { deleteUnstartedConversation } from './conversation.repository.js';
export * from './conversation.service.js';
export { type InboundOfNumber, joinInbound } from './inbound.js';
export { raiseMessageStatuses, raiseStatusesOfMessages } from './status-events.js';
