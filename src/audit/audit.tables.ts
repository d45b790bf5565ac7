export interface AuditLogTable {
  id: string;
  org_id: string;
  /** `cli`, or the email address of the dashboard user who acted. */
  actor: string;
  action: string;
  target_type: string;
  target_id: string;
  /** JSON object, or null. */
  details: string | null;
  at: number;
}
