import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { RetryLater } from '../jobs/job-runner.js';
import { sendingDecision } from '../sending-rules/sending-rules.service.js';
import type { Clock } from '../shared/clock.js';
import { markDeliveryFailed } from './campaign.repository.js';
import { templateCategory } from './template-category.js';

/** The error of a delivery the marketing frequency cap stopped. */
export const FREQUENCY_CAP = 'frequency_cap';

/**
 * The organization's sending rules, asked by a delivery before it sends: true to go on. During
 * quiet hours the job comes back when they end (RetryLater: no attempt is counted); an end user at
 * the marketing cap gets no more, the delivery ends failed with `frequency_cap`.
 */
export async function sendingRulesAllow(
  db: Kysely<DB>,
  clock: Clock,
  row: { id: string; org_id: string; to_phone: string; template_name: string; template_language: string },
): Promise<boolean> {
  const now = clock.now();
  const decision = await sendingDecision(db, {
    orgId: row.org_id,
    deliveryId: row.id,
    phone: row.to_phone,
    now,
    template: { name: row.template_name, language: row.template_language },
    isMarketing: async (t) => (await templateCategory(db, row.org_id, t)) === 'MARKETING',
  });
  if (decision.kind === 'wait') throw new RetryLater(Math.max(1_000, decision.until - now), 'quiet hours');
  if (decision.kind === 'capped') {
    await markDeliveryFailed(db, row.id, FREQUENCY_CAP, now, { onlyUnclaimed: true });
    return false;
  }
  return true;
}
