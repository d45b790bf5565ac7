import type { Kysely } from 'kysely';
import type { AppContext } from '../context.js';
import type { DB } from '../db/schema.js';
import { getOrganization } from '../orgs/org.service.js';
import { type PageRequest, pageOf, seekOf, type TwoWayPage } from '../shared/page.js';
import { toDelivery } from './accept-recipients.js';
import type { DeliveryStatus } from './campaign.repository.js';
import type { DeliveriesResponse } from './campaign.schemas.js';
import { type Campaign, type DeliveryCounts, getCampaign, toCampaign } from './campaign.service.js';
import { countDeliveriesOf, listCampaignPageRows, listDeliveryRows } from './campaign-list.repository.js';

/**
 * The dashboard's campaign lists, a page at a time both ways: the organization's campaigns with
 * their counts by status (one grouped count for the page), and a campaign's deliveries newest
 * first, of one status or all.
 */

const CAMPAIGN_ID = /^cmp_[A-Za-z0-9]{22}$/;
const DELIVERY_ID = /^dlv_[A-Za-z0-9]{22}$/;

export type CampaignWithCounts = Campaign & { counts: DeliveryCounts };
export type Delivery = DeliveriesResponse['data'][number];

export async function pageOfCampaigns(
  db: Kysely<DB>,
  orgId: string,
  request: PageRequest,
): Promise<TwoWayPage<CampaignWithCounts>> {
  await getOrganization(db, orgId);
  const seek = seekOf(request, CAMPAIGN_ID);
  const rows = await listCampaignPageRows(db, orgId, seek, request.limit + 1);
  const page = pageOf(rows, request.limit, seek, (r) => ({ at: Number(r.created_at), id: r.id }), toCampaign);
  const counts = await countDeliveriesOf(
    db,
    page.data.map((c) => c.id),
  );
  return {
    ...page,
    data: page.data.flatMap((c) => {
      const of = counts.get(c.id);
      return of ? [{ ...c, counts: of }] : [];
    }),
  };
}

export async function pageOfCampaignDeliveries(
  ctx: Pick<AppContext, 'db'>,
  orgId: string,
  campaignId: string,
  request: PageRequest & { status?: DeliveryStatus | undefined },
): Promise<TwoWayPage<Delivery>> {
  const campaign = await getCampaign(ctx.db, orgId, campaignId);
  const seek = seekOf(request, DELIVERY_ID);
  const rows = await listDeliveryRows(ctx.db, campaign.id, {
    status: request.status,
    limit: request.limit + 1,
    seek,
    newestFirst: true,
  });
  return pageOf(rows, request.limit, seek, (r) => ({ at: r.created_at, id: r.id }), toDelivery);
}
