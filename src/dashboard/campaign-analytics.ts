import type { FastifyInstance } from 'fastify';
import { campaignStats } from '../analytics/analytics.service.js';
import { getCampaign } from '../campaigns/campaign.service.js';
import { exportCampaignDeliveries } from '../campaigns/delivery-export.service.js';
import type { AppContext } from '../context.js';
import { barChart, dayLabel, hourLabel, rowChart } from './charts.js';
import type { PageKit } from './page-kit.js';
import type { Session } from './session.service.js';
import { renderPartial } from './views.js';

/** A campaign page's analytics: its funnel, its deliveries over time, its failures, and the CSV of its deliveries. */

const DAY = 86_400_000;

export async function campaignAnalyticsSection(ctx: Pick<AppContext, 'db'>, session: Session, campaignId: string) {
  // Hours while a campaign's activity fits in three days; days after that.
  const hourly = await campaignStats(ctx.db, session.org.id, campaignId, 'hour');
  const first = hourly.buckets[0]?.start ?? 0;
  const last = hourly.buckets[hourly.buckets.length - 1]?.start ?? 0;
  const byDay = last - first > 3 * DAY;
  const stats = byDay ? await campaignStats(ctx.db, session.org.id, campaignId, 'day') : hourly;
  const t = stats.totals;
  const funnel = rowChart({
    id: 'chart-funnel',
    title: 'Funnel',
    labelHeading: 'Step',
    rows: [
      { label: 'Accepted', value: t.accepted },
      { label: 'Sent', value: t.sent },
      { label: 'Delivered', value: t.delivered },
      { label: 'Read', value: t.read },
      { label: 'Replied (within 72 h)', value: t.replied },
    ],
  });
  const overTime = barChart({
    id: 'chart-sent-over-time',
    title: `Deliveries sent per ${byDay ? 'day' : 'hour'}`,
    unit: 'deliveries',
    labelHeading: byDay ? 'Day (UTC)' : 'Hour (UTC)',
    bars: stats.buckets.map((b) => ({ label: byDay ? dayLabel(b.start) : hourLabel(b.start), value: b.sent })),
  });
  const failures = rowChart({
    id: 'chart-campaign-failures',
    title: `Failures by reason (${t.failed} in all)`,
    labelHeading: 'Reason',
    rows: stats.failures.map((f) => ({ label: f.reason, value: f.count })),
  });
  return renderPartial('campaign-analytics', { campaignId, funnel, overTime, failures });
}

export function registerCampaignAnalyticsPages(app: FastifyInstance, ctx: AppContext, kit: PageKit): void {
  app.get('/dashboard/campaigns/:campaignId/deliveries.csv', kit.signedIn, async (request, reply) => {
    const session = kit.sessionOf(request);
    const { campaignId } = request.params as { campaignId: string };
    const campaign = await getCampaign(ctx.db, session.org.id, campaignId);
    const chunks: string[] = [];
    await exportCampaignDeliveries(ctx, session.org.id, campaign.id, (chunk) => {
      chunks.push(chunk);
    });
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${campaign.id}-deliveries.csv"`)
      .send(chunks.join(''));
  });
}
