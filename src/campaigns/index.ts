/**
 * What other features use of campaigns beyond campaign.service.ts: the statuses a delivery can be
 * in, and a page of a campaign's deliveries (the dashboard's campaign page).
 */
export { deliveriesOfCampaign } from './accept-recipients.js';
export { DELIVERY_STATUSES, type DeliveryStatus } from './campaign.repository.js';
