/**
 * The provider webhooks' own table (migration 0016). A body whose work kept failing is a dead
 * letter of the job runner (`job_dead_letters`, queue `provider-webhook`), not a row here.
 */

/**
 * A provider webhook body holding an inbound message for a phone number ID no number has, kept
 * until the number is added (`parley number add` replays it) or an operator replays it.
 */
export interface UnroutedWebhookTable {
  id: string;
  /** The raw body, as signed. */
  body: string;
  received_at: number;
  /** Attempts made so far. */
  attempts: number;
  last_error: string;
  /** When it was last kept (its last attempt). */
  kept_at: number;
  /** `,id1,id2,`: the unknown phone number IDs (an empty one when the webhook named none). */
  phone_number_ids: string;
}
