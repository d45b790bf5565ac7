/**
 * What other features use of campaigns beyond campaign.service.ts: the statuses a delivery can be
 * in, and the pages of campaigns and of a campaign's deliveries (the dashboard's campaign pages).
 */
export { DELIVERY_STATUSES, type DeliveryStatus } from './campaign.repository.js';
export {
  type CampaignWithCounts,
  type Delivery,
  pageOfCampaignDeliveries,
  pageOfCampaigns,
} from './campaign-lists.service.js';
