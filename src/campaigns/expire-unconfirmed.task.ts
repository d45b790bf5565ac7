import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import type { Clock } from '../shared/clock.js';
import { CAMPAIGN_UNCONFIRMED_QUEUE, type CampaignUnconfirmedJob } from './campaign.queues.js';
import { markDeliveryFailed, messageStatus } from './campaign.repository.js';

export interface UnconfirmedDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly jobs: JobRunner;
  /** PARLEY_CAMPAIGN_UNCONFIRMED_MS: how long a send's unknown outcome may wait for a status. */
  readonly unconfirmedMs: number;
}

/**
 * The unconfirmed queue: a send whose outcome is unknown is left to the provider's status
 * webhooks (our message ID travels as `biz_opaque_callback_data`), and its delivery failed if
 * nothing has settled it within `unconfirmedMs`.
 */
export class UnconfirmedSends {
  constructor(private readonly deps: UnconfirmedDeps) {}

  define(jobs: JobRunner): void {
    jobs.define<CampaignUnconfirmedJob>({
      name: CAMPAIGN_UNCONFIRMED_QUEUE,
      handler: (payload) => this.expire(payload),
    });
  }

  /** Checks on the delivery's send once `unconfirmedMs` has passed. */
  async watch(deliveryId: string, messageId: string): Promise<void> {
    await this.deps.jobs.enqueue<CampaignUnconfirmedJob>(
      CAMPAIGN_UNCONFIRMED_QUEUE,
      { deliveryId, messageId },
      { delayMs: this.deps.unconfirmedMs },
    );
  }

  /** A send whose outcome no status webhook has settled by now is failed, with that reason. */
  async expire(payload: CampaignUnconfirmedJob): Promise<void> {
    const { db, clock, unconfirmedMs } = this.deps;
    const status = await messageStatus(db, payload.messageId);
    if (status !== undefined && status !== 'pending' && status !== 'unconfirmed') return;
    const minutes = Math.round(unconfirmedMs / 60_000);
    await markDeliveryFailed(
      db,
      payload.deliveryId,
      `Whether the provider accepted the message is unknown (its answer was lost) and no status arrived within ${minutes > 0 ? `${minutes} minutes` : 'the allowed time'}; it was not sent again.`,
      clock.now(),
      { messageId: payload.messageId },
    );
  }
}
