import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config, Region } from '../config.js';
import type { Database } from '../db/database.js';
import type { JobRunner } from '../jobs/job-runner.js';
import type { MediaStore } from '../media/index.js';
import { createSecretBox, type SecretBox, secretKeyOf, webhookAppSecretOf } from '../numbers/index.js';
import type { Metrics } from '../ops/index.js';
import { clearSandboxAddress, type Sandbox, startSandbox, writeSandboxAddress } from '../sandbox/index.js';
import type { Clock } from '../shared/clock.js';
import { defineInboundMediaQueue } from './inbound-media.task.js';
import { createCloudProvider, type MessagingProvider } from './provider.js';
import { createProviderMedia, type ProviderMedia } from './provider-media.js';
import { createProviderRequests, type ProviderRequests } from './provider-requests.js';
import { defineProviderWebhookQueue } from './provider-webhook.task.js';
import { WebhookProcessor } from './webhook.service.js';

/** The messaging parts of a region's context. */
export interface Messaging {
  readonly provider: MessagingProvider;
  /** The provider's media endpoints (resolve a media ID, fetch its bytes). */
  readonly providerMedia: ProviderMedia;
  /** The provider's requests beside a send: uploads for a number, read receipts. */
  readonly providerRequests: ProviderRequests;
  /** The in-process sandbox, when no provider base address is configured. */
  readonly sandbox: Sandbox | undefined;
  readonly webhooks: WebhookProcessor;
  readonly secrets: SecretBox;
  readonly appSecret: string;
  /** Called once the region's server listens: the sandbox sends its webhooks there. */
  attachServer(url: string): void;
  close(): Promise<void>;
}

/** The sandbox's own state (its windows) in the data folder. */
export const SANDBOX_STATE_FILE = 'sandbox-state.db';
/** The files users sent the sandbox, kept as the provider keeps them, in the data folder. */
export const SANDBOX_MEDIA_DIR = 'sandbox-media';

export async function createMessaging(
  config: Config,
  region: Region,
  database: Database,
  clock: Clock,
  logger: Logger,
  jobs: JobRunner,
  media: { readonly store: MediaStore; readonly baseUrl: string },
  metrics?: Metrics,
): Promise<Messaging> {
  const m = config.messaging;
  const secrets = createSecretBox(secretKeyOf(m.secretKey, config.dataDir));
  const appSecret = webhookAppSecretOf(m.webhookAppSecret, config.dataDir);
  const sandbox = m.providerBaseUrl
    ? undefined
    : await startSandbox({
        clock,
        appSecret,
        templates: m.sandboxTemplates,
        statusDelayMs: m.sandboxStatusDelayMs,
        statuses: m.sandboxStatuses,
        ...(m.sandboxMps !== undefined ? { mps: m.sandboxMps } : {}),
        // Shared by every sandbox of this data folder (regions, processes, restarts), as a provider's memory is.
        stateFile: join(config.dataDir, SANDBOX_STATE_FILE),
        mediaDir: join(config.dataDir, SANDBOX_MEDIA_DIR),
        ...(config.media.sandboxBytesPerSecond ? { mediaBytesPerSecond: config.media.sandboxBytesPerSecond } : {}),
        onError: (err, what) => logger.warn({ err, what }, 'sandbox could not deliver a webhook'),
      });
  const cloud = createCloudProvider({
    baseUrl: m.providerBaseUrl ?? sandbox?.url ?? '',
    version: m.providerApiVersion,
    timeoutMs: m.providerTimeoutMs,
  });
  const provider = metrics ? metrics.instrumentProvider(cloud) : cloud;
  const providerMedia = createProviderMedia({
    baseUrl: m.providerBaseUrl ?? sandbox?.url ?? '',
    version: m.providerApiVersion,
    timeoutMs: m.providerTimeoutMs,
  });
  const providerRequests = createProviderRequests({
    baseUrl: m.providerBaseUrl ?? sandbox?.url ?? '',
    version: m.providerApiVersion,
    timeoutMs: m.providerTimeoutMs,
  });
  const webhooks = new WebhookProcessor(database.db, clock, logger, {
    jobs,
    conversationIdleMs: config.conversations.idleMs,
    botFallbackMs: config.conversations.botFallbackMs,
    baseUrl: media.baseUrl,
  });
  defineProviderWebhookQueue(jobs, webhooks);
  defineInboundMediaQueue(
    jobs,
    {
      db: database.db,
      clock,
      logger,
      jobs,
      store: media.store,
      provider: providerMedia,
      secrets,
      baseUrl: media.baseUrl,
    },
    config.media.downloadRetryDelaysMs,
  );
  let attached = false;
  return {
    provider,
    providerMedia,
    providerRequests,
    sandbox,
    webhooks,
    secrets,
    appSecret,
    attachServer(url) {
      if (!sandbox) return;
      sandbox.setWebhookUrl(`${url}/webhooks/msgapp`);
      // So that `parley sandbox inbound` finds this sandbox on its ephemeral port.
      attached = true;
      writeSandboxAddress(config.dataDir, region, sandbox.url);
    },
    async close() {
      if (sandbox && attached) clearSandboxAddress(config.dataDir, region, sandbox.url);
      await sandbox?.close();
      await webhooks.close();
      await provider.close();
      await providerMedia.close();
      await providerRequests.close();
    },
  };
}
