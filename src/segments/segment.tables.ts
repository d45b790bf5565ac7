/** The segments table as stored. */
export interface SegmentTable {
  id: string;
  org_id: string;
  name: string;
  /** JSON text of the SegmentFilter. */
  filter: string;
  created_at: number;
  count: number;
  counted_at: number;
}
