/** The job queues of campaigns, and what their jobs carry. */

/** Queues one delivery job per listed delivery (or per queued delivery of the campaign). */
export const CAMPAIGN_DISPATCH_QUEUE = 'campaign-dispatch';
/** Sends one delivery, paced per sending number. */
export const CAMPAIGN_DELIVERY_QUEUE = 'campaign-delivery';
/** Fails a delivery whose send outcome is still unknown after PARLEY_CAMPAIGN_UNCONFIRMED_MS. */
export const CAMPAIGN_UNCONFIRMED_QUEUE = 'campaign-unconfirmed';

export interface CampaignDispatchJob {
  readonly campaignId: string;
  /** The deliveries one request accepted; absent: every delivery of the campaign still queued. */
  readonly deliveryIds?: readonly string[];
}

export interface CampaignDeliveryJob {
  readonly deliveryId: string;
}

export interface CampaignUnconfirmedJob {
  readonly deliveryId: string;
  readonly messageId: string;
}
