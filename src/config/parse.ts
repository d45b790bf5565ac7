/**
 * `loadConfig`: flags and environment read once, through the list of settings (settings.ts), into
 * one frozen object passed to whoever needs it. What is not a single setting lives here: rules
 * across settings (a headers timeout within the request timeout, secrets shared by every node on
 * PostgreSQL) and values made of several.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { fromEnv, read } from './read.js';
import { regionConfigs, regionList } from './regions.js';
import type {
  CampaignsConfig,
  Config,
  ConfigFlags,
  EventsConfig,
  HttpLimits,
  MediaConfig,
  MessagingConfig,
} from './types.js';
import { ConfigError } from './values.js';

type Env = Record<string, string | undefined>;

/** Parses flags and environment once; the result is frozen and passed to whoever needs it. */
export function loadConfig(flags: ConfigFlags = {}, env: Env = process.env): Config {
  const list = regionList(flags, env);
  const dataDir = resolve(read('PARLEY_DATA_DIR', flags.data ?? env.PARLEY_DATA_DIR));
  if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) {
    throw new ConfigError(`data folder "${dataDir}" is not a folder (--data, PARLEY_DATA_DIR)`);
  }
  const host = read('PARLEY_HOST', flags.host ?? env.PARLEY_HOST ?? env.HOST);
  const port = flags.port ?? env.PARLEY_PORT ?? env.PORT;
  const firstPort = read('PARLEY_PORT', port === undefined ? undefined : String(port));
  if (firstPort + list.length - 1 > 65535) throw new ConfigError('port range runs past 65535');
  const regions = regionConfigs(list, env, { host, firstPort, dataDir });

  return Object.freeze({
    regions,
    dataDir,
    logLevel: fromEnv(env, 'LOG_LEVEL'),
    bodyLimit: fromEnv(env, 'PARLEY_BODY_LIMIT'),
    http: httpLimits(env),
    metrics: Object.freeze({
      enabled: fromEnv(env, 'PARLEY_METRICS'),
      token: fromEnv(env, 'PARLEY_METRICS_TOKEN'),
    }),
    redisUrl: fromEnv(env, 'REDIS_URL'),
    redisPrefix: fromEnv(env, 'PARLEY_REDIS_PREFIX'),
    sendRateLimit: Object.freeze({
      perKey: fromEnv(env, 'PARLEY_SEND_RATE_LIMIT'),
      perOrg: fromEnv(env, 'PARLEY_SEND_RATE_LIMIT_ORG'),
    }),
    campaigns: campaignsConfig(env),
    lastUsedFlushMs: fromEnv(env, 'PARLEY_LAST_USED_FLUSH_MS'),
    events: eventsConfig(env),
    conversations: Object.freeze({
      idleMs: fromEnv(env, 'PARLEY_CONVERSATION_IDLE_MS'),
      sweepMs: fromEnv(env, 'PARLEY_CONVERSATION_SWEEP_MS'),
      botFallbackMs: fromEnv(env, 'PARLEY_BOT_FALLBACK_MS'),
    }),
    jobs: Object.freeze({
      leaseMs: fromEnv(env, 'PARLEY_JOB_LEASE_MS'),
      pollMs: fromEnv(env, 'PARLEY_JOB_POLL_MS'),
    }),
    trustProxy: fromEnv(env, 'PARLEY_TRUST_PROXY'),
    dashboard: Object.freeze({
      sessionIdleMs: fromEnv(env, 'PARLEY_DASHBOARD_SESSION_IDLE_MINUTES') * 60_000,
      sessionMaxMs: fromEnv(env, 'PARLEY_DASHBOARD_SESSION_MAX_HOURS') * 3_600_000,
      passwordCost: fromEnv(env, 'PARLEY_PASSWORD_HASH_COST'),
      signInLimit: Object.freeze({
        perEmail: fromEnv(env, 'PARLEY_SIGNIN_LIMIT_EMAIL'),
        perAddress: fromEnv(env, 'PARLEY_SIGNIN_LIMIT_ADDRESS'),
        windowMs: 15 * 60_000,
      }),
      upgradeUrl: fromEnv(env, 'PARLEY_UPGRADE_URL'),
    }),
    media: mediaConfig(env),
    policies: Object.freeze({
      templateSyncMs: fromEnv(env, 'PARLEY_TEMPLATE_SYNC_MS'),
      optOutStrict: fromEnv(env, 'PARLEY_OPT_OUT_STRICT'),
    }),
    messaging: messagingConfig(
      env,
      regions.some((r) => r.database.kind === 'postgres'),
    ),
  });
}

function httpLimits(env: Env): HttpLimits {
  const headersTimeoutMs = fromEnv(env, 'PARLEY_HEADERS_TIMEOUT_MS');
  const requestTimeoutMs = fromEnv(env, 'PARLEY_REQUEST_TIMEOUT_MS');
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('PARLEY_HEADERS_TIMEOUT_MS must not be longer than PARLEY_REQUEST_TIMEOUT_MS');
  }
  return Object.freeze({
    headersTimeoutMs,
    requestTimeoutMs,
    // Longer than the idle timeout of common load balancers (60 s), so they close first.
    keepAliveTimeoutMs: fromEnv(env, 'PARLEY_KEEP_ALIVE_TIMEOUT_MS'),
    maxConnections: fromEnv(env, 'PARLEY_MAX_CONNECTIONS'),
  });
}

function campaignsConfig(env: Env): CampaignsConfig {
  return Object.freeze({
    rateLimit: Object.freeze({
      perKey: fromEnv(env, 'PARLEY_CAMPAIGN_RATE_LIMIT'),
      perOrg: fromEnv(env, 'PARLEY_CAMPAIGN_RATE_LIMIT_ORG'),
    }),
    numberMps: fromEnv(env, 'PARLEY_NUMBER_MPS'),
    unconfirmedMs: fromEnv(env, 'PARLEY_CAMPAIGN_UNCONFIRMED_MS'),
    retryDelaysMs: fromEnv(env, 'PARLEY_CAMPAIGN_RETRY_DELAYS_MS'),
    throttleRetries: fromEnv(env, 'PARLEY_CAMPAIGN_THROTTLE_RETRIES'),
  });
}

function mediaConfig(env: Env): MediaConfig {
  return Object.freeze({
    store: fromEnv(env, 'PARLEY_MEDIA_STORE'),
    s3: Object.freeze({
      bucket: fromEnv(env, 'PARLEY_MEDIA_S3_BUCKET'),
      endpoint: fromEnv(env, 'PARLEY_MEDIA_S3_ENDPOINT'),
      region: fromEnv(env, 'PARLEY_MEDIA_S3_REGION'),
      forcePathStyle: fromEnv(env, 'PARLEY_MEDIA_S3_FORCE_PATH_STYLE'),
      prefix: fromEnv(env, 'PARLEY_MEDIA_S3_PREFIX'),
    }),
    retentionDays: fromEnv(env, 'PARLEY_MEDIA_RETENTION_DAYS'),
    sweepMs: fromEnv(env, 'PARLEY_MEDIA_SWEEP_MS'),
    downloadRetryDelaysMs: fromEnv(env, 'PARLEY_MEDIA_DOWNLOAD_RETRY_DELAYS_MS'),
    sandboxBytesPerSecond: fromEnv(env, 'PARLEY_SANDBOX_MEDIA_BYTES_PER_SECOND'),
  });
}

function eventsConfig(env: Env): EventsConfig {
  return Object.freeze({
    allowPrivate: fromEnv(env, 'PARLEY_WEBHOOK_ALLOW_PRIVATE'),
    retryDelaysMs: fromEnv(env, 'PARLEY_EVENT_RETRY_DELAYS_MS'),
    timeoutMs: fromEnv(env, 'PARLEY_EVENT_TIMEOUT_MS'),
    disableAfterMs: fromEnv(env, 'PARLEY_EVENT_DISABLE_AFTER_MS'),
  });
}

/**
 * Secrets every node of a deployment must share. On SQLite (one embedded database per data folder)
 * they may be generated into the data folder; PostgreSQL means several nodes may serve the same
 * data, and per-folder secrets would make a number added on one node unusable on the others.
 */
const SHARED_SECRETS = ['PARLEY_SECRET_KEY', 'PARLEY_WEBHOOK_APP_SECRET'] as const;

function messagingConfig(env: Env, onPostgres: boolean): MessagingConfig {
  const missing = SHARED_SECRETS.filter((name) => !env[name]?.trim());
  if (onPostgres && missing.length > 0) {
    throw new ConfigError(
      `${missing.join(' and ')} must be set when running on PostgreSQL (DATABASE_URL), with the same value on every ` +
        'node: make PARLEY_SECRET_KEY with `openssl rand -base64 32`; PARLEY_WEBHOOK_APP_SECRET is the provider ' +
        "app's secret, or with the built-in sandbox any value such as `openssl rand -hex 32`",
    );
  }
  const providerApiVersion = fromEnv(env, 'PARLEY_PROVIDER_API_VERSION');
  return Object.freeze({
    providerBaseUrl: fromEnv(env, 'PARLEY_PROVIDER_BASE_URL'),
    providerApiVersion,
    providerTimeoutMs: fromEnv(env, 'PARLEY_PROVIDER_TIMEOUT_MS'),
    secretKey: fromEnv(env, 'PARLEY_SECRET_KEY'),
    webhookAppSecret: fromEnv(env, 'PARLEY_WEBHOOK_APP_SECRET'),
    webhookVerifyToken: fromEnv(env, 'PARLEY_WEBHOOK_VERIFY_TOKEN'),
    sandboxTemplates: fromEnv(env, 'PARLEY_SANDBOX_TEMPLATES'),
    sandboxStatusDelayMs: fromEnv(env, 'PARLEY_SANDBOX_STATUS_DELAY_MS'),
    sandboxMps: fromEnv(env, 'PARLEY_SANDBOX_MPS'),
    sandboxStatuses: fromEnv(env, 'PARLEY_SANDBOX_STATUSES'),
  });
}
