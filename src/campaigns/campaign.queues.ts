/** The job queues of campaigns, and what their jobs carry. */

export {
  CAMPAIGN_DELIVERY_QUEUE,
  CAMPAIGN_DISPATCH_QUEUE,
  CAMPAIGN_UNCONFIRMED_QUEUE,
  SEGMENT_SEND_QUEUE,
} from '../jobs/queues.js';

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

export interface SegmentSendJob {
  readonly sendId: string;
}
