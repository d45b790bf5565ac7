import type { SegmentFilter } from './segment.schemas.js';

/** A segment as the API shows it. */
export interface Segment {
  id: string;
  name: string;
  filter: SegmentFilter;
  /** Members counted now (GET one, create) or at `countedAt` (lists). */
  count: number;
  countedAt: number;
  createdAt: number;
}

export const MAX_SEGMENT_NAME = 100;
export const MAX_SEGMENT_ATTRIBUTES = 20;
export const SEGMENT_ID = /^seg_[0-9A-Za-z]{22}$/;
