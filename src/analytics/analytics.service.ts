import type { Kysely } from 'kysely';
import { getCampaign } from '../campaigns/campaign.service.js';
import type { DB } from '../db/schema.js';
import { countsByHour, failureReasons } from './analytics.repository.js';

/**
 * Analytics read from the counters the database keeps as messages, deliveries, conversations and
 * end users change (migration 0064): a handful of rows per hour, so a campaign of a million
 * deliveries answers as fast as one of ten.
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const FOREVER = Number.MAX_SAFE_INTEGER;

export const CAMPAIGN_METRICS = ['accepted', 'sent', 'delivered', 'read', 'replied', 'failed'] as const;
type CampaignMetric = (typeof CAMPAIGN_METRICS)[number];
export type CampaignTotals = Record<CampaignMetric, number>;
export type CampaignBucket = { start: number } & Omit<CampaignTotals, 'accepted'>;

export interface CampaignStats {
  totals: CampaignTotals;
  buckets: CampaignBucket[];
  failures: { reason: string; count: number }[];
}

const zero = <K extends string>(keys: readonly K[]) => Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;

/** A campaign's funnel, its buckets (every bucket from the first to the last with anything in it) and its failures. */
export async function campaignStats(
  db: Kysely<DB>,
  orgId: string,
  campaignId: string,
  bucket: 'hour' | 'day',
): Promise<CampaignStats> {
  const campaign = await getCampaign(db, orgId, campaignId);
  const [rows, failures] = await Promise.all([
    countsByHour(db, campaign.id, CAMPAIGN_METRICS, 0, FOREVER),
    failureReasons(db, campaign.id, 0, FOREVER, 20),
  ]);
  const totals = zero(CAMPAIGN_METRICS);
  const size = bucket === 'hour' ? HOUR : DAY;
  const byStart = new Map<number, CampaignBucket>();
  for (const r of rows) {
    const metric = r.metric as CampaignMetric;
    totals[metric] += r.n;
    if (metric === 'accepted') continue;
    const start = Math.floor(r.bucket / size) * size;
    let b = byStart.get(start);
    if (!b) {
      b = { start, sent: 0, delivered: 0, read: 0, replied: 0, failed: 0 };
      byStart.set(start, b);
    }
    b[metric] += r.n;
  }
  const starts = [...byStart.keys()].sort((a, b) => a - b);
  const buckets: CampaignBucket[] = [];
  const first = starts[0];
  const last = starts[starts.length - 1];
  if (first !== undefined && last !== undefined) {
    for (let s = first; s <= last; s += size) {
      buckets.push(byStart.get(s) ?? { start: s, sent: 0, delivered: 0, read: 0, replied: 0, failed: 0 });
    }
  }
  return { totals, buckets, failures };
}

export const OVERVIEW_METRICS = [
  'sent',
  'delivered',
  'read',
  'failed',
  'received',
  'conversations',
  'handoffs',
  'optouts',
] as const;
export type OverviewMetric = (typeof OVERVIEW_METRICS)[number];
export type OverviewDay = { start: number } & Record<OverviewMetric, number>;

export interface Overview {
  days: OverviewDay[];
  totals: Record<OverviewMetric, number>;
  failures: { reason: string; count: number }[];
}

/** The organization's last `days` days (UTC), today included, per day; and its top failure reasons then. */
export async function orgOverview(db: Kysely<DB>, orgId: string, days: number, now: number): Promise<Overview> {
  const today = Math.floor(now / DAY) * DAY;
  const since = today - (days - 1) * DAY;
  const until = today + DAY;
  const [rows, failures] = await Promise.all([
    countsByHour(db, orgId, OVERVIEW_METRICS, since, until),
    failureReasons(db, orgId, since, until, 5),
  ]);
  const list: OverviewDay[] = Array.from({ length: days }, (_, i) => ({
    start: since + i * DAY,
    ...zero(OVERVIEW_METRICS),
  }));
  const totals = zero(OVERVIEW_METRICS);
  for (const r of rows) {
    const day = list[Math.floor((r.bucket - since) / DAY)];
    const metric = r.metric as OverviewMetric;
    if (!day) continue;
    day[metric] += r.n;
    totals[metric] += r.n;
  }
  return { days: list, totals, failures };
}
