/** Where a delivery stands on our side; the provider's progress is read from its message. */
export type DeliveryState = 'queued' | 'sending' | 'failed';

/** One recipient of a campaign: stored before the 202, sent at most once by a job. */
export interface CampaignDeliveryTable {
  id: string;
  org_id: string;
  campaign_id: string;
  /** E.164. */
  to_phone: string;
  /** JSON `{"body": [...], "header": [...]}` given with the recipient; null: the campaign's defaults. */
  parameters: string | null;
  /** JSON of the fields for an end user made for the recipient. */
  end_user: string | null;
  dedupe_key: string | null;
  state: DeliveryState;
  /**
   * Our message ID (`msg_...`), chosen and stored before the provider is called: a run that finds
   * it set with its message stored never sends again.
   */
  message_id: string | null;
  /** When `message_id` was set; a claim that never stored its message is taken over after a while. */
  claimed_at: number | null;
  end_user_id: string | null;
  conversation_id: string | null;
  /** Why it failed on our side (a rejection, an outcome that stayed unknown). */
  error: string | null;
  /** Throughput and pair-rate refusals so far. */
  throttles: number;
  created_at: number;
  /** When the provider accepted it. */
  sent_at: number | null;
  updated_at: number;
  /** Until when quiet hours hold it back (migration 0063); optional on insert. */
  held_until?: number | null;
  /** When the end user first wrote back within 72 hours of the send (migration 0064; set by a trigger). */
  replied_at?: number | null;
}

/** A `dedupeKey` seen in a campaign, kept 30 days, pointing at the delivery it made. */
export interface CampaignDedupeKeyTable {
  campaign_id: string;
  dedupe_key: string;
  delivery_id: string;
  created_at: number;
}

export type SegmentSendStatus = 'scheduled' | 'running' | 'done' | 'canceled';

/** A campaign sent to a segment (migration 0062). */
export interface SegmentSendTable {
  id: string;
  org_id: string;
  campaign_id: string;
  segment_id: string;
  segment_name: string;
  at: number;
  parameters: string | null;
  status: SegmentSendStatus;
  members: number;
  accepted: number;
  duplicates: number;
  opted_out: number;
  skipped: number;
  /** The last member (by ID) turned into a delivery: where a run taken over goes on. */
  after_end_user_id: string;
  error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
}
