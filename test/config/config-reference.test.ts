import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configurationPage } from '../../src/config/docs.js';
import { namesOf } from '../../src/config/read.js';
import { SETTINGS, type SettingName } from '../../src/config/settings.js';
import type { Setting } from '../../src/config/values.js';
import { type Config, loadConfig } from '../../src/config.js';

const SRC = new URL('../../src/', import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

const NAMES = Object.keys(SETTINGS) as SettingName[];
const SECRETS = { PARLEY_SECRET_KEY: 'k', PARLEY_WEBHOOK_APP_SECRET: 's' };
const POSTGRES = { DATABASE_URL: 'postgres://parley@127.0.0.1:5432/parley', ...SECRETS };
const region = (c: Config) => c.regions[0];
const database = (c: Config) => c.regions[0]?.database;
const sqlite = (c: Config) => {
  const d = database(c);
  return d?.kind === 'sqlite' ? d : undefined;
};
const pg = (c: Config) => {
  const d = database(c);
  return d?.kind === 'postgres' ? d : undefined;
};

/**
 * Where `loadConfig` puts each setting it reads, in the unit of the list; `postgres`: read only
 * when the region is on PostgreSQL. A setting read elsewhere (`readBy`) has no entry.
 */
const PARSED: Record<string, [(c: Config) => unknown, 'postgres'?]> = {
  PARLEY_REGION: [(c) => region(c)?.region],
  PARLEY_PORT: [(c) => region(c)?.port],
  PARLEY_HOST: [(c) => region(c)?.host],
  PARLEY_BASE_URL: [(c) => region(c)?.baseUrl],
  PARLEY_BODY_LIMIT: [(c) => c.bodyLimit],
  LOG_LEVEL: [(c) => c.logLevel],
  PARLEY_LAST_USED_FLUSH_MS: [(c) => c.lastUsedFlushMs],
  PARLEY_HEADERS_TIMEOUT_MS: [(c) => c.http.headersTimeoutMs],
  PARLEY_REQUEST_TIMEOUT_MS: [(c) => c.http.requestTimeoutMs],
  PARLEY_KEEP_ALIVE_TIMEOUT_MS: [(c) => c.http.keepAliveTimeoutMs],
  PARLEY_MAX_CONNECTIONS: [(c) => c.http.maxConnections],
  PARLEY_TRUST_PROXY: [(c) => c.trustProxy],
  PARLEY_METRICS: [(c) => c.metrics.enabled],
  PARLEY_METRICS_TOKEN: [(c) => c.metrics.token],
  PARLEY_DATA_DIR: [(c) => relative(process.cwd(), c.dataDir)],
  DATABASE_URL: [(c) => pg(c)?.url],
  PARLEY_PG_SCHEMA: [(c) => pg(c)?.schema, 'postgres'],
  PARLEY_PG_POOL_SIZE: [(c) => pg(c)?.poolSize, 'postgres'],
  REDIS_URL: [(c) => c.redisUrl],
  PARLEY_PG_CONNECT_TIMEOUT_MS: [(c) => pg(c)?.connectTimeoutMs, 'postgres'],
  PARLEY_PG_STATEMENT_TIMEOUT_MS: [(c) => pg(c)?.statementTimeoutMs, 'postgres'],
  PARLEY_SQLITE_BUSY_TIMEOUT_MS: [(c) => sqlite(c)?.busyTimeoutMs],
  PARLEY_JOB_LEASE_MS: [(c) => c.jobs.leaseMs],
  PARLEY_JOB_POLL_MS: [(c) => c.jobs.pollMs],
  PARLEY_REDIS_PREFIX: [(c) => c.redisPrefix],
  PARLEY_SEND_RATE_LIMIT: [(c) => c.sendRateLimit.perKey],
  PARLEY_SEND_RATE_LIMIT_ORG: [(c) => c.sendRateLimit.perOrg],
  PARLEY_PROVIDER_BASE_URL: [(c) => c.messaging.providerBaseUrl],
  PARLEY_PROVIDER_API_VERSION: [(c) => c.messaging.providerApiVersion],
  PARLEY_PROVIDER_TIMEOUT_MS: [(c) => c.messaging.providerTimeoutMs],
  PARLEY_SECRET_KEY: [(c) => c.messaging.secretKey],
  PARLEY_WEBHOOK_APP_SECRET: [(c) => c.messaging.webhookAppSecret],
  PARLEY_WEBHOOK_VERIFY_TOKEN: [(c) => c.messaging.webhookVerifyToken],
  PARLEY_SANDBOX_TEMPLATES: [(c) => c.messaging.sandboxTemplates],
  PARLEY_SANDBOX_STATUS_DELAY_MS: [(c) => c.messaging.sandboxStatusDelayMs],
  PARLEY_SANDBOX_STATUSES: [(c) => c.messaging.sandboxStatuses],
  PARLEY_SANDBOX_MPS: [(c) => c.messaging.sandboxMps],
  PARLEY_WEBHOOK_ALLOW_PRIVATE: [(c) => c.events.allowPrivate],
  PARLEY_EVENT_RETRY_DELAYS_MS: [(c) => c.events.retryDelaysMs],
  PARLEY_EVENT_TIMEOUT_MS: [(c) => c.events.timeoutMs],
  PARLEY_EVENT_DISABLE_AFTER_MS: [(c) => c.events.disableAfterMs],
  PARLEY_CONVERSATION_IDLE_MS: [(c) => c.conversations.idleMs],
  PARLEY_CONVERSATION_SWEEP_MS: [(c) => c.conversations.sweepMs],
  PARLEY_BOT_FALLBACK_MS: [(c) => c.conversations.botFallbackMs],
  PARLEY_CAMPAIGN_RATE_LIMIT: [(c) => c.campaigns.rateLimit.perKey],
  PARLEY_CAMPAIGN_RATE_LIMIT_ORG: [(c) => c.campaigns.rateLimit.perOrg],
  PARLEY_NUMBER_MPS: [(c) => c.campaigns.numberMps],
  PARLEY_CAMPAIGN_UNCONFIRMED_MS: [(c) => c.campaigns.unconfirmedMs],
  PARLEY_CAMPAIGN_RETRY_DELAYS_MS: [(c) => c.campaigns.retryDelaysMs],
  PARLEY_CAMPAIGN_THROTTLE_RETRIES: [(c) => c.campaigns.throttleRetries],
  PARLEY_DASHBOARD_SESSION_IDLE_MINUTES: [(c) => c.dashboard.sessionIdleMs / 60_000],
  PARLEY_DASHBOARD_SESSION_MAX_HOURS: [(c) => c.dashboard.sessionMaxMs / 3_600_000],
  PARLEY_PASSWORD_HASH_COST: [(c) => c.dashboard.passwordCost],
  PARLEY_SIGNIN_LIMIT_EMAIL: [(c) => c.dashboard.signInLimit.perEmail],
  PARLEY_SIGNIN_LIMIT_ADDRESS: [(c) => c.dashboard.signInLimit.perAddress],
  PARLEY_UPGRADE_URL: [(c) => c.dashboard.upgradeUrl],
  PARLEY_MEDIA_STORE: [(c) => c.media.store],
  PARLEY_MEDIA_S3_BUCKET: [(c) => c.media.s3.bucket],
  PARLEY_MEDIA_S3_ENDPOINT: [(c) => c.media.s3.endpoint],
  PARLEY_MEDIA_S3_REGION: [(c) => c.media.s3.region],
  PARLEY_MEDIA_S3_FORCE_PATH_STYLE: [(c) => c.media.s3.forcePathStyle],
  PARLEY_MEDIA_S3_PREFIX: [(c) => c.media.s3.prefix],
  PARLEY_MEDIA_RETENTION_DAYS: [(c) => c.media.retentionDays],
  PARLEY_MEDIA_SWEEP_MS: [(c) => c.media.sweepMs],
  PARLEY_TEMPLATE_SYNC_MS: [(c) => c.policies.templateSyncMs],
  PARLEY_OPT_OUT_STRICT: [(c) => c.policies.optOutStrict],
  PARLEY_MEDIA_DOWNLOAD_RETRY_DELAYS_MS: [(c) => c.media.downloadRetryDelaysMs],
  PARLEY_SANDBOX_MEDIA_BYTES_PER_SECOND: [(c) => c.media.sandboxBytesPerSecond],
};

/** Defaults the list shows in words because they are made from other settings, as `loadConfig` makes them. */
const DERIVED: Partial<Record<SettingName, unknown>> = {
  PARLEY_BASE_URL: 'http://127.0.0.1:3000',
  PARLEY_PG_SCHEMA: 'parley_us',
};

/** A value other than the default for each setting that is not a number or a boolean: [set, read back]. */
const SAMPLES: Partial<Record<SettingName, [string, unknown]>> = {
  PARLEY_REGION: ['eu', 'eu'],
  PARLEY_HOST: ['0.0.0.0', '0.0.0.0'],
  PARLEY_BASE_URL: ['https://api.example.com/', 'https://api.example.com'],
  PARLEY_DATA_DIR: ['other-data', 'other-data'],
  LOG_LEVEL: ['WARN', 'warn'],
  PARLEY_TRUST_PROXY: ['2', 2],
  PARLEY_METRICS_TOKEN: ['token', 'token'],
  DATABASE_URL: ['postgres://other@db.example:5432/parley', 'postgres://other@db.example:5432/parley'],
  PARLEY_PG_SCHEMA: ['custom', 'custom'],
  REDIS_URL: ['redis://127.0.0.1:6380', 'redis://127.0.0.1:6380'],
  PARLEY_REDIS_PREFIX: ['other', 'other'],
  PARLEY_PROVIDER_BASE_URL: ['https://graph.example.com', 'https://graph.example.com'],
  PARLEY_PROVIDER_API_VERSION: ['v26.0', 'v26.0'],
  PARLEY_SECRET_KEY: ['key', 'key'],
  PARLEY_WEBHOOK_APP_SECRET: ['app', 'app'],
  PARLEY_WEBHOOK_VERIFY_TOKEN: ['verify', 'verify'],
  PARLEY_SANDBOX_TEMPLATES: ['[{"name":"a","language":"en"}]', [{ name: 'a', language: 'en', header: 0, body: 0 }]],
  PARLEY_SANDBOX_MPS: ['7', 7],
  PARLEY_EVENT_RETRY_DELAYS_MS: ['1, 2', [1, 2]],
  PARLEY_CAMPAIGN_RETRY_DELAYS_MS: ['3,4', [3, 4]],
  PARLEY_UPGRADE_URL: ['https://billing.example.com', 'https://billing.example.com'],
  PARLEY_MEDIA_STORE: ['S3', 's3'],
  PARLEY_MEDIA_S3_BUCKET: ['media', 'media'],
  PARLEY_MEDIA_S3_ENDPOINT: ['http://127.0.0.1:9000/', 'http://127.0.0.1:9000'],
  PARLEY_MEDIA_S3_REGION: ['eu-west-1', 'eu-west-1'],
  PARLEY_MEDIA_S3_PREFIX: ['parley/', 'parley/'],
  PARLEY_MEDIA_DOWNLOAD_RETRY_DELAYS_MS: ['5,6', [5, 6]],
  PARLEY_SANDBOX_MEDIA_BYTES_PER_SECOND: ['1000', 1000],
};

/** The setting as `loadConfig` answers it; with `env`, the secrets PostgreSQL requires are set too. */
function parsed(name: SettingName, env?: Record<string, string>): unknown {
  const [at, on] = PARSED[name] ?? [() => undefined];
  return at(loadConfig({}, { ...(env ? SECRETS : {}), ...(on === 'postgres' ? POSTGRES : {}), ...env }));
}

describe('the configuration reference', () => {
  it('lists every environment variable the code reads', () => {
    const read = new Set<string>();
    for (const file of sourceFiles(SRC)) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\benv\.([A-Z][A-Z0-9_]+)|env\[['"`]([A-Z][A-Z0-9_]+)/g)) {
        read.add(m[1] ?? m[2] ?? '');
      }
    }
    const listed = new Set(NAMES.flatMap(namesOf));
    // `env[\`PARLEY_BASE_URL_${region}\`]` reads the per-region form, listed as PARLEY_BASE_URL_<REGION>.
    const missing = [...read]
      .map((name) => (name.endsWith('_') ? `${name}<REGION>` : name))
      .filter((name) => !listed.has(name))
      .sort();
    expect(missing, 'add these to src/config/settings.ts').toEqual([]);
  });

  it('has for each setting the default loadConfig answers when nothing is set', () => {
    const readByLoadConfig = NAMES.filter((name) => !(SETTINGS[name] as Setting).readBy);
    expect(Object.keys(PARSED).sort(), 'say in this test where loadConfig puts each setting').toEqual(
      [...readByLoadConfig].sort(),
    );
    for (const name of readByLoadConfig) {
      const setting: Setting = SETTINGS[name];
      const expected = name in DERIVED ? DERIVED[name] : setting.default;
      expect(parsed(name), name).toEqual(expected);
    }
  });

  it('reads each setting from its variable', () => {
    for (const name of Object.keys(PARSED) as SettingName[]) {
      const setting: Setting = SETTINGS[name];
      const value = setting.default;
      const [raw, expected] =
        SAMPLES[name] ??
        (typeof value === 'number'
          ? [String(value + 1), value + 1]
          : typeof value === 'boolean'
            ? [String(!value), !value]
            : ['', undefined]);
      expect(raw, `a sample value for ${name} in this test`).not.toBe('');
      expect(parsed(name, { [name]: raw }), name).toEqual(expected);
    }
  });

  it('docs/configuration.md is the page generated from it', () => {
    const page = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(page, 'run: node --import tsx scripts/config-docs.ts').toBe(configurationPage());
  });
});
