import type { Kysely } from 'kysely';
import { type SendDeps, sendFromAgent } from '../channels/index.js';
import type { CampaignsConfig } from '../config.js';
import type { DB } from '../db/schema.js';
import type { JobRunner } from '../jobs/job-runner.js';
import { halfPaceLookup } from '../policies/number-health.service.js';
import type { Clock } from '../shared/clock.js';
import {
  CAMPAIGN_DELIVERY_QUEUE,
  CAMPAIGN_DISPATCH_QUEUE,
  CAMPAIGN_UNCONFIRMED_QUEUE,
  SEGMENT_SEND_QUEUE,
} from './campaign.queues.js';
import { CampaignDeliverer } from './deliver-campaign.task.js';
import { CampaignDispatcher } from './dispatch-campaign.task.js';
import { UnconfirmedSends } from './expire-unconfirmed.task.js';
import type { NumberPacer } from './number-pacer.js';
import { SegmentSender } from './segment-send.task.js';

/** What campaigns' three queues use, all built before them. */
export interface CampaignTaskDeps {
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly jobs: JobRunner;
  readonly config: CampaignsConfig;
  readonly providerTimeoutMs: number;
  /** Paces each number's sends; closed with the tasks. */
  readonly pacer: NumberPacer;
  /** What a send from an agent's number uses. */
  readonly send: SendDeps;
}

export interface CampaignTasks {
  close(): Promise<void>;
}

/** Campaigns' queues (dispatch, delivery, unconfirmed), defined on the job runner with their work. */
export function defineCampaignTasks(deps: CampaignTaskDeps): CampaignTasks {
  const { db, clock, jobs } = deps;
  const unconfirmed = new UnconfirmedSends({ db, clock, jobs, unconfirmedMs: deps.config.unconfirmedMs });
  const deliverer = new CampaignDeliverer({
    db,
    clock,
    config: deps.config,
    providerTimeoutMs: deps.providerTimeoutMs,
    pacer: deps.pacer,
    send: (input) => sendFromAgent(deps.send, input),
    unconfirmed,
    // The number's health halves its campaigns' pace when YELLOW (src/policies/).
    halfPace: halfPaceLookup(db),
  });
  new CampaignDispatcher({ db, jobs }).define(jobs);
  deliverer.define(jobs);
  unconfirmed.define(jobs);
  new SegmentSender({ db, clock, jobs }).define(jobs);
  return { close: () => deliverer.close() };
}

/**
 * For a process that only adds campaign work for the servers (the CLI): the queues, so that the
 * job store knows them, never worked here (the process does not start its job runner).
 */
export function defineCampaignQueues(jobs: JobRunner): void {
  const notHere = async () => {
    throw new Error('campaign jobs are worked by a server, not by this process');
  };
  for (const name of [
    CAMPAIGN_DISPATCH_QUEUE,
    CAMPAIGN_DELIVERY_QUEUE,
    CAMPAIGN_UNCONFIRMED_QUEUE,
    SEGMENT_SEND_QUEUE,
  ]) {
    jobs.define({ name, handler: notHere });
  }
}
