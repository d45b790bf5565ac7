/** An organization's sending rules (migration 0063); a null rule is off. */
export interface OrgSendingRulesTable {
  org_id: string;
  quiet_start: string | null;
  quiet_end: string | null;
  time_zone: string | null;
  marketing_cap: number | null;
  updated_at: number;
}
