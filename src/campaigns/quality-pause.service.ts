import type { Kysely } from 'kysely';
import { inTransaction, recordAudit } from '../audit/audit.service.js';
import type { DB } from '../db/schema.js';
import { emitEvent, eventId } from '../events/event.service.js';
import type { JobRunner } from '../jobs/job-runner.js';
import type { Clock } from '../shared/clock.js';
import { pauseCampaignsOfNumber } from './quality-pause.repository.js';

/**
 * A number whose quality rating turned RED: its active campaigns are paused with the reason, each
 * recorded in the audit log (by `parley`) and raised as `campaign.paused`, in one transaction.
 * Every node's deliveries read the campaign's status before each send, so all stop at once.
 */
export async function pauseForQuality(
  deps: { readonly db: Kysely<DB>; readonly jobs: JobRunner; readonly clock: Clock },
  input: { orgId: string; numberId: string; phone: string; quality: string },
): Promise<string[]> {
  const at = deps.clock.now();
  const reason = `The quality rating of ${input.phone} turned ${input.quality}: the provider may lower its messaging limit or block it. Resume once the rating recovers.`;
  return inTransaction(deps.db, async (trx) => {
    const paused = await pauseCampaignsOfNumber(trx, input.orgId, input.numberId, reason, at);
    for (const c of paused) {
      await recordAudit(trx, {
        orgId: c.org_id,
        actor: 'parley',
        action: 'campaign.paused',
        targetType: 'campaign',
        targetId: c.id,
        details: { name: c.name, reason },
        at,
      });
      if (c.agent_id) {
        await emitEvent(
          { db: trx, jobs: deps.jobs, clock: deps.clock },
          {
            id: eventId('campaign.paused', `${c.id}\u0000${at}`),
            type: 'campaign.paused',
            orgId: c.org_id,
            agentId: c.agent_id,
            data: { campaignId: c.id, name: c.name, reason, numberId: input.numberId, quality: input.quality },
            at,
          },
        );
      }
    }
    return paused.map((c) => c.id);
  });
}
