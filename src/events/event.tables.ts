/** Where an organization's events go; bound to one agent, it is that agent's hook. */
export interface EventEndpointTable {
  id: string;
  org_id: string;
  agent_id: string | null;
  url: string;
  /** Comma-separated event types, or '*'. */
  events: string;
  /** `whsec_` + base64: signs every delivery. */
  secret: string;
  /** The secret before the last rotation, which also signs until `previous_secret_until`. */
  previous_secret: string | null;
  previous_secret_until: number | null;
  disabled_at: number | null;
  disabled_reason: string | null;
  /** First failure of the current run of failures (null once a delivery succeeds). */
  failing_since: number | null;
  created_at: number;
}

export type EventDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event for one endpoint. */
export interface EventDeliveryTable {
  id: string;
  endpoint_id: string;
  org_id: string;
  event_id: string;
  event_type: string;
  /** The JSON body, exactly as signed and sent. */
  payload: string;
  status: EventDeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
}
