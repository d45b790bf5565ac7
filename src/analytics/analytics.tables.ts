/** A counter of `stat_counts` (migration 0064): kept by triggers, read here, never written by code. */
export interface StatCountTable {
  /** An organization ID or a campaign ID. */
  key: string;
  /** Start of the hour, ms. */
  bucket: number;
  metric: string;
  /** A failure's reason; '' for other metrics. */
  reason: string;
  shard: number;
  n: number;
}
