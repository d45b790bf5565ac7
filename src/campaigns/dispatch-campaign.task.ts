import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import {
  CAMPAIGN_DELIVERY_QUEUE,
  CAMPAIGN_DISPATCH_QUEUE,
  type CampaignDeliveryJob,
  type CampaignDispatchJob,
} from './campaign.queues.js';
import { campaignStatus, queuedDeliveryIds } from './campaign.repository.js';

const PAGE = 1_000;

export interface DispatchDeps {
  readonly db: Kysely<DB>;
  readonly jobs: JobRunner;
}

/** The dispatch queue: one delivery job queued per delivery of a campaign. */
export class CampaignDispatcher {
  constructor(private readonly deps: DispatchDeps) {}

  define(jobs: JobRunner): void {
    jobs.define<CampaignDispatchJob>({
      name: CAMPAIGN_DISPATCH_QUEUE,
      concurrency: 2,
      handler: (payload) => this.dispatch(payload),
    });
  }

  /** Queues one delivery job per delivery; run again after a crash, it queues them again (harmless). */
  async dispatch(payload: CampaignDispatchJob): Promise<void> {
    const { db, jobs } = this.deps;
    // A paused campaign's deliveries are queued by its resume.
    if ((await campaignStatus(db, payload.campaignId)) !== 'active') return;
    const enqueueAll = (ids: readonly string[]) =>
      db.transaction().execute(async (trx) => {
        for (const deliveryId of ids) {
          await jobs.enqueue<CampaignDeliveryJob>(CAMPAIGN_DELIVERY_QUEUE, { deliveryId }, { db: trx });
        }
      });
    if (payload.deliveryIds) {
      await enqueueAll(payload.deliveryIds);
    } else {
      let after = '';
      for (;;) {
        const ids = await queuedDeliveryIds(db, payload.campaignId, after, PAGE);
        if (ids.length === 0) break;
        await enqueueAll(ids);
        after = ids[ids.length - 1] ?? '';
      }
    }
  }
}
