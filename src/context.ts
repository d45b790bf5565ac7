import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { LastUsedTracker } from './auth/last-used.js';
import { defineCampaignTasks } from './campaigns/campaign-tasks.js';
import { createNumberPacer, type NumberPacer } from './campaigns/number-pacer.js';
import { pauseForQuality } from './campaigns/quality-pause.service.js';
import { sendFromAgent } from './channels/index.js';
import type { Config, RegionConfig } from './config.js';
import { IdleSweeper } from './conversations/idle-sweep.js';
import { countAllWaitingRows, defineBotFallbackQueue } from './conversations/index.js';
import { type Database, migrateToLatest, openDatabase } from './db/database.js';
import type { DB } from './db/schema.js';
import { EventDeliverer } from './events/deliver-event.task.js';
import { defineHoldingTextQueue } from './inbox/holding-text.task.js';
import type { JobRunner } from './jobs/job-runner.js';
import { createJobRunner } from './jobs/jobs.js';
import { LiveHub } from './live/index.js';
import { createMediaStore, defineMediaRetention, type MediaStore } from './media/index.js';
import { createMessaging, type Messaging } from './messaging/messaging.js';
import { secretBoxOf } from './numbers/index.js';
import { Metrics } from './ops/metrics.js';
import { allNumberHealth } from './policies/number-health.service.js';
import {
  type AccountTaskDeps,
  createPolicyDeps,
  defineAccountTasks,
  defineConsentKeywordQueue,
} from './policies/policy-tasks.js';
import { createSendRateLimiter, type SendRateLimiter } from './rate-limit/send-rate-limiter.js';
import { AfterAnswer } from './shared/after-answer.js';
import { type Clock, systemClock } from './shared/clock.js';
import { createLogger } from './shared/logger.js';

/*
 * The composition root: every dependency of one region's server is built here, once, bottom up
 * (the database, the job runner, messaging, the pacer, then what uses them: a send, campaigns'
 * queues), and handed down as the narrow set each part uses. It stays at src/context.ts rather
 * than moving to src/app/: every route plugin takes the `AppContext` it returns, and nothing below
 * the routes imports this file (services, tasks and repositories declare what they use beside
 * them), so it is the one place that knows the whole and no import cycle runs through it.
 */

/** Everything one region's server needs, built once at boot and passed down. */
export interface AppContext {
  readonly config: Config;
  readonly region: RegionConfig;
  readonly database: Database;
  readonly db: Kysely<DB>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly lastUsed: LastUsedTracker;
  /** Per-key and per-organization limits of the send and trigger endpoints. */
  readonly sendRateLimiter: SendRateLimiter;
  /** Per-key and per-organization limits of the campaign endpoints (counters of their own). */
  readonly campaignRateLimiter: SendRateLimiter;
  /** Provider adapter, in-process sandbox (when no provider is configured), webhook processor. */
  readonly messaging: Messaging;
  /** Background work: provider webhooks now, on queues every node of the region shares. */
  readonly jobs: JobRunner;
  /** Prometheus metrics, when enabled (PARLEY_METRICS). */
  readonly metrics: Metrics | undefined;
  /** Closes conversations idle past PARLEY_CONVERSATION_IDLE_MS. */
  readonly idleSweeper: IdleSweeper;
  /** Paces each number's campaign sends (PARLEY_NUMBER_MPS), counting its interactive sends. */
  readonly numberPacer: NumberPacer;
  /** What requests left to run after their answer (the statuses that outran a send); close() waits for it. */
  readonly afterAnswer: AfterAnswer;
  /** The changes open inbox pages of this node hear (every node's, on PostgreSQL). */
  readonly live: LiveHub;
  /** Where the bytes of media live (PARLEY_MEDIA_STORE): the data folder or S3. */
  readonly mediaStore: MediaStore;
  /** The numbers' template catalogues and health, read from the provider (src/policies/). */
  readonly policies: AccountTaskDeps;
  close(): Promise<void>;
}

export interface ContextOptions {
  clock?: Clock;
  logger?: Logger;
  migrate?: boolean;
  /** Work the job queues in this process (default true). */
  workJobs?: boolean;
  /** Rate limit window in seconds; only tests change it (production: 60). */
  rateLimitWindowSeconds?: number;
  /** SQLite: WAL checkpoints on a worker thread, off the request path (a server does this). */
  backgroundCheckpoints?: boolean;
}

export async function createContext(
  config: Config,
  region: RegionConfig,
  options: ContextOptions = {},
): Promise<AppContext> {
  const logger = options.logger ?? createLogger(config, { region: region.region });
  const database = await openDatabase(region.database, {
    logger,
    ...(options.backgroundCheckpoints ? { backgroundCheckpoints: true } : {}),
  });
  if (options.migrate !== false) await migrateToLatest(database.db, { secrets: () => secretBoxOf(config) });
  const lastUsed = new LastUsedTracker(database.db, config.lastUsedFlushMs, (err) =>
    logger.error({ err }, 'could not record key last-used times'),
  );
  lastUsed.start();
  const sendRateLimiter = await createSendRateLimiter({
    ...config.sendRateLimit,
    region: region.region,
    logger,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
    ...(options.rateLimitWindowSeconds ? { windowSeconds: options.rateLimitWindowSeconds } : {}),
  });
  await sendRateLimiter.ready();
  const campaignRateLimiter = await createSendRateLimiter({
    ...config.campaigns.rateLimit,
    region: region.region,
    logger,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
    storeName: 'crl',
    ...(options.rateLimitWindowSeconds ? { windowSeconds: options.rateLimitWindowSeconds } : {}),
  });
  await campaignRateLimiter.ready();
  const clock = options.clock ?? systemClock;
  const mediaStore = await createMediaStore(config, region.region);
  if (mediaStore.kind === 'folder' && region.database.kind === 'postgres') {
    logger.warn(
      { mediaFolder: mediaStore.where },
      'media is kept in a folder while the database is PostgreSQL: every node must share that folder (a network file system), or set PARLEY_MEDIA_STORE=s3',
    );
  }
  const metrics = config.metrics.enabled ? new Metrics(region.region) : undefined;
  const jobs = await createJobRunner(config, region.database, database, clock, logger, (queue) =>
    metrics?.jobFailures.inc({ queue }),
  );
  metrics?.watchJobs(jobs);
  metrics?.watchWaiting(() => countAllWaitingRows(database.db));
  metrics?.watchNumberHealth(() => allNumberHealth(database.db));
  const messaging = await createMessaging(
    config,
    region.region,
    database,
    clock,
    logger,
    jobs,
    { store: mediaStore, baseUrl: region.baseUrl },
    metrics,
  );
  const eventDeliverer = new EventDeliverer({
    db: database.db,
    clock,
    logger,
    config: config.events,
    secrets: messaging.secrets,
  });
  eventDeliverer.define(jobs);
  const numberPacer = await createNumberPacer({
    mps: config.campaigns.numberMps,
    region: region.region,
    logger,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
  });
  const afterAnswer = new AfterAnswer(logger);
  // A send from an agent's number, built before the campaign work that uses it.
  const send = { database, db: database.db, clock, logger, jobs, config, messaging, numberPacer };
  const campaignTasks = defineCampaignTasks({
    db: database.db,
    clock,
    jobs,
    config: config.campaigns,
    providerTimeoutMs: config.messaging.providerTimeoutMs,
    pacer: numberPacer,
    send,
  });
  const idleSweeper = new IdleSweeper(
    { db: database.db, jobs, clock, idleMs: config.conversations.idleMs },
    config.conversations.sweepMs,
    logger,
  );
  idleSweeper.define(jobs);
  // People in the loop: the fallback to people when the bot's hook is silent, and the holding text.
  defineBotFallbackQueue(jobs, { db: database.db, jobs, clock, idleMs: config.conversations.idleMs });
  defineHoldingTextQueue(jobs, send);
  const live = new LiveHub(region.database, logger);
  defineMediaRetention(
    jobs,
    { db: database.db, store: mediaStore, clock, logger, retentionDays: config.media.retentionDays },
    config.media.sweepMs,
  );
  const policies = createPolicyDeps(config, {
    db: database.db,
    clock,
    logger,
    messaging,
    // A number turning RED pauses the campaigns sending from it (YELLOW halves their pace: campaigns).
    onQualityChange: async ({ orgId, numberId, phone, quality }) => {
      if (quality !== 'RED') return;
      const paused = await pauseForQuality({ db: database.db, jobs, clock }, { orgId, numberId, phone, quality });
      if (paused.length > 0)
        logger.warn({ numberId, quality, campaigns: paused }, 'campaigns paused: their number turned RED');
    },
  });
  defineAccountTasks(jobs, policies, config.policies.templateSyncMs);
  // Opt-out and opt-in keywords; the organization's opt-out reply goes out as any send does.
  defineConsentKeywordQueue(jobs, {
    db: database.db,
    jobs,
    clock,
    logger,
    reply: async ({ orgId, agentId, to, text }) => {
      const content = { kind: 'text' as const, text };
      const result = await sendFromAgent(send, {
        orgId,
        agentId,
        to,
        content,
        conversation: { origin: 'manual', required: false },
      });
      if (!result.ok) logger.warn({ orgId, to, reason: result.sentence }, 'the opt-out reply was refused');
    },
  });
  // Every queue is defined by now (the features above); the store is prepared, then worked.
  await jobs.init();
  if (options.workJobs !== false) jobs.start();
  return {
    config,
    region,
    database,
    db: database.db,
    clock,
    logger,
    lastUsed,
    sendRateLimiter,
    campaignRateLimiter,
    messaging,
    jobs,
    metrics,
    idleSweeper,
    numberPacer,
    afterAnswer,
    live,
    mediaStore,
    policies,
    async close() {
      // Before the job runner and the database: this work writes and raises events.
      await afterAnswer.idle();
      await jobs.stop();
      await eventDeliverer.close();
      await campaignTasks.close();
      await messaging.close();
      await sendRateLimiter.close();
      await campaignRateLimiter.close();
      await lastUsed.stop();
      await live.close();
      await mediaStore.close();
      await database.close();
    },
  };
}
