/**
 * Conversations' public surface for other features: the service's verbs, the events they raise,
 * joining an inbound message, and the send path's reads and writes of its recipient.
 */

export { defineBotFallbackQueue } from './bot-fallback.task.js';
export { emitConversationStarted, emitMessageReceived, type StartedEndUser } from './conversation.events.js';
export {
  findConversation,
  findConversationWithKeyEpoch,
  findRecipient,
  findRecipientStoringMessage,
  type KnownRecipient,
  touchConversation,
} from './conversation.fast.js';
export { deleteUnstartedConversation } from './conversation.repository.js';
export type { ThreadMessage as ThreadMessageOf } from './conversation.schemas.js';
export * from './conversation.service.js';
export { type Handling, handlingOf } from './handling.model.js';
export { clearAssigneeEverywhere, countAllWaitingRows, countWaitingRows, markAnswered } from './handling.repository.js';
export { type Actor, assign, type HoldingTextJob, handOff, release, takeOver } from './handoff.service.js';
export { type InboundOfNumber, joinInbound } from './inbound.js';
export { type LastMessage, lastMessageOf } from './last-message.js';
export { authorsOf, claimAuthor, deleteAuthor, findAuthor, messageExists } from './message-author.repository.js';
export { raiseMessageStatuses, raiseStatusesOfMessages } from './status-events.js';
