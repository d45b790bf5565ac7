/** A claimed idempotency key: `in_flight` while its request runs, `done` with the stored response. */
export interface IdempotencyKeyTable {
  org_id: string;
  key: string;
  /** SHA-256 (hex) of the route and the canonical JSON body. */
  request_hash: string;
  state: 'in_flight' | 'done';
  response_status: number | null;
  /** The response body exactly as it was sent (serialized JSON). */
  response_body: string | null;
  created_at: number;
  /** Random, per claim: whose claim this is, when a claim's answer was lost (null before 0020). */
  claim_token: string | null;
}
