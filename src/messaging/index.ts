/**
 * Messaging's public surface for other features: its domain facts, and the reads and writes of
 * messages, statuses and windows. (The routes, services and webhooks are reached by the app.)
 */

export { type InboundEventFields, inboundFields, mediaUrlOf, type StoredKind } from './inbound-event.js';
export { findMessage, findMessageWithKeyEpoch, insertMessage, isWindowOpen, markAccepted } from './message.fast.js';
export {
  MESSAGE_COLUMN_TYPES,
  MESSAGE_COLUMNS,
  MESSAGE_READ_COLUMNS,
  type MessageRead,
  type MessageStatus,
  PENDING_STATUS_TTL_MS,
  PROVIDER_STATUSES,
  type ProviderStatus,
  STATUS_RANK,
  type StatusEvent,
  type StatusRow,
  WINDOW_MS,
} from './message.model.js';
export { findMessageAgent, markSendFailed } from './message.repository.js';
export { findMessageContents, insertMessageContent } from './message-content.repository.js';
export type {
  ListMessage,
  OutboundContent,
  OutboundMedia,
  OutboundMediaKind,
  ReplyButton,
  WireMedia,
} from './outbound-content.js';
export type { MessagingProvider, ProviderResult, ProviderSend } from './provider.js';
export type { ProviderRequests, RequestFailure } from './provider-requests.js';
export { applyStatus, applyStatuses, lockMessagesForStatuses, type StatusTargetOfAgent } from './status.fast.js';
export {
  adoptProviderMessageId,
  applyPendingStatuses,
  findMessageForStatus,
  messagesWithPendingStatuses,
  purgePendingStatuses,
  type StatusTarget,
  storePendingStatus,
} from './status.repository.js';
export { openWindow } from './window.repository.js';
