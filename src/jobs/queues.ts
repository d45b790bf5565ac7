/**
 * Every queue of the job runner, in one list: its name (as pg-boss, `parley jobs status` and the
 * metrics show it) and what its jobs do. The feature named beside each defines its workers
 * (`JobRunner.define`, or `JobRunner.schedule` for a scheduled job) and says what a job carries.
 */

/** Delivers one event to one endpoint (events: `deliver-event.task.ts`). */
export const EVENT_DELIVERY_QUEUE = 'event-delivery';
/** Applies one provider webhook body, statuses in batches (messaging: the webhook processor). */
export const PROVIDER_WEBHOOK_QUEUE = 'provider-webhook';
/** Queues one delivery job per listed delivery, or per queued delivery of the campaign (campaigns). */
export const CAMPAIGN_DISPATCH_QUEUE = 'campaign-dispatch';
/** Sends one campaign delivery, paced per sending number (campaigns). */
export const CAMPAIGN_DELIVERY_QUEUE = 'campaign-delivery';
/** Fails a delivery whose send outcome is still unknown after PARLEY_CAMPAIGN_UNCONFIRMED_MS (campaigns). */
export const CAMPAIGN_UNCONFIRMED_QUEUE = 'campaign-unconfirmed';

/**
 * Scheduled: closes conversations idle past PARLEY_CONVERSATION_IDLE_MS, once every
 * PARLEY_CONVERSATION_SWEEP_MS across the region's nodes (conversations: `idle-sweep.ts`).
 */
export const CONVERSATION_IDLE_SWEEP_QUEUE = 'conversation-idle-sweep';

/**
 * Hands a conversation to people when the agent's hook has not acknowledged an end user's message
 * within PARLEY_BOT_FALLBACK_MS (conversations: `bot-fallback.task.ts`).
 */
export const BOT_FALLBACK_QUEUE = 'bot-fallback';
/** Sends an agent's holding text once per handoff Parley made (inbox: `holding-text.task.ts`). */
export const HOLDING_TEXT_QUEUE = 'holding-text';
/** Downloads the file of one inbound message from the provider into the media store, then raises `message.received` (messaging: `inbound-media.task.ts`). */
export const INBOUND_MEDIA_QUEUE = 'inbound-media';

/** Scheduled: deletes media older than PARLEY_MEDIA_RETENTION_DAYS, once every PARLEY_MEDIA_SWEEP_MS across the region's nodes (media: `media-retention.ts`). */
export const MEDIA_RETENTION_QUEUE = 'media-retention';

/** Turns the members of a segment into deliveries of a campaign, once, at the send's time (campaigns: `segment-send.task.ts`). */
export const SEGMENT_SEND_QUEUE = 'segment-send';
/**
 * Applies a provider webhook about an account or a number (a template's new status, a number's
 * quality) once the webhook body was taken (policies: `account-change.task.ts`).
 */
export const ACCOUNT_CHANGE_QUEUE = 'account-change';
/**
 * Scheduled: reads every number's templates and quality from the provider again, once every
 * PARLEY_TEMPLATE_SYNC_MS across the region's nodes (policies: `account-change.task.ts`).
 */
export const TEMPLATE_SYNC_QUEUE = 'template-sync';
/** Sends an organization's opt-out confirmation and applies opt-out/opt-in keywords of inbound messages (policies). */
export const CONSENT_KEYWORD_QUEUE = 'consent-keyword';

/** Every queue's name. */
export const QUEUE_NAMES = [
  EVENT_DELIVERY_QUEUE,
  PROVIDER_WEBHOOK_QUEUE,
  CAMPAIGN_DISPATCH_QUEUE,
  CAMPAIGN_DELIVERY_QUEUE,
  CAMPAIGN_UNCONFIRMED_QUEUE,
  CONVERSATION_IDLE_SWEEP_QUEUE,
  BOT_FALLBACK_QUEUE,
  HOLDING_TEXT_QUEUE,
  INBOUND_MEDIA_QUEUE,
  MEDIA_RETENTION_QUEUE,
  SEGMENT_SEND_QUEUE,
  ACCOUNT_CHANGE_QUEUE,
  TEMPLATE_SYNC_QUEUE,
  CONSENT_KEYWORD_QUEUE,
] as const;

export type QueueName = (typeof QUEUE_NAMES)[number];
