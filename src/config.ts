import { existsSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';

export const REGIONS = ['us', 'eu', 'in', 'qa'] as const;
export type Region = (typeof REGIONS)[number];

export const REGION_NAMES: Record<Region, string> = {
  us: 'United States',
  eu: 'European Union',
  in: 'India',
  qa: 'Qatar',
};

export type DatabaseConfig =
  | {
      readonly kind: 'sqlite';
      readonly file: string;
      /** Longest wait for another connection's write lock (`busy_timeout`). */
      readonly busyTimeoutMs: number;
    }
  | {
      readonly kind: 'postgres';
      readonly url: string;
      readonly schema: string;
      readonly poolSize: number;
      /** Longest wait for a connection (a new one, or one from the pool). */
      readonly connectTimeoutMs: number;
      /** Longest a statement may run (`statement_timeout`); the client gives up a little later. */
      readonly statementTimeoutMs: number;
    };

export interface RegionConfig {
  readonly region: Region;
  readonly host: string;
  readonly port: number;
  readonly baseUrl: string;
  readonly database: DatabaseConfig;
}

export interface Config {
  readonly regions: readonly RegionConfig[];
  readonly dataDir: string;
  readonly logLevel: string;
  readonly bodyLimit: number;
  /** Prometheus metrics at `GET /metrics`: off unless enabled; optionally behind a bearer token. */
  readonly metrics: { readonly enabled: boolean; readonly token: string | undefined };
  /** Bounds of an HTTP connection: slow or idle clients are let go. */
  readonly http: HttpLimits;
  readonly redisUrl: string | undefined;
  /** First segment of every Redis key (`<prefix>:<region>:rl:...`), so deployments can share a Redis. */
  readonly redisPrefix: string;
  readonly sendRateLimit: { readonly perKey: number; readonly perOrg: number };
  readonly campaigns: CampaignsConfig;
  /** Flush interval of the buffered "last used" times of keys. */
  readonly lastUsedFlushMs: number;
  /** The job runner: lease of a claimed job (renewed while it runs), and the idle poll interval. */
  readonly jobs: { readonly leaseMs: number; readonly pollMs: number };
  readonly events: EventsConfig;
  readonly conversations: { readonly idleMs: number; readonly sweepMs: number };
  /** Which proxies' `X-Forwarded-For` to believe (Fastify's `trustProxy`): false, true, hops, or addresses. */
  readonly trustProxy: TrustProxy;
  readonly messaging: MessagingConfig;
  readonly dashboard: DashboardConfig;
}

/** The web dashboard at /dashboard. */
export interface DashboardConfig {
  /** A session unused this long ends (PARLEY_DASHBOARD_SESSION_IDLE_MINUTES, default 60). */
  readonly sessionIdleMs: number;
  /** Failed sign-ins per email address, and per client address, within 15 minutes before refusing. */
  readonly signInLimit: { readonly perEmail: number; readonly perAddress: number; readonly windowMs: number };
  /** Billing page the Upgrade button opens; unset: an owner switches to the paid plan after confirming. */
  readonly upgradeUrl: string | undefined;
}

export type TrustProxy = boolean | number | readonly string[];

/** A template the built-in sandbox accepts: parameter counts per component. */
export interface SandboxTemplate {
  readonly name: string;
  readonly language: string;
  readonly header: number;
  readonly body: number;
}

export interface MessagingConfig {
  /** Provider API base address; unset means the built-in sandbox. */
  readonly providerBaseUrl: string | undefined;
  readonly providerApiVersion: string;
  readonly providerTimeoutMs: number;
  /** Key that encrypts access tokens (32 bytes, base64 or hex); unset (SQLite only): `<data>/secret.key`. */
  readonly secretKey: string | undefined;
  /** App secret that signs provider webhooks; unset (SQLite only): `<data>/webhook-app-secret`. */
  readonly webhookAppSecret: string | undefined;
  readonly webhookVerifyToken: string | undefined;
  readonly sandboxTemplates: readonly SandboxTemplate[];
  /** Pause of the sandbox between a send and each of its status webhooks. */
  readonly sandboxStatusDelayMs: number;
  /** Sends per second per number the sandbox accepts before answering 130429; unset: no limit. */
  readonly sandboxMps: number | undefined;
  /** Whether the sandbox sends status webhooks after each send (off for send benchmarks). */
  readonly sandboxStatuses: boolean;
}

export interface HttpLimits {
  /** Longest wait for a request's headers. */
  readonly headersTimeoutMs: number;
  /** Longest wait for a whole request, body included. */
  readonly requestTimeoutMs: number;
  /** How long a kept-alive connection may sit idle between requests. */
  readonly keepAliveTimeoutMs: number;
  /** Open connections at most; more are refused until some close. */
  readonly maxConnections: number;
}

function parseHttpLimits(env: Env): HttpLimits {
  const headersTimeoutMs = parsePositiveInt('PARLEY_HEADERS_TIMEOUT_MS', env.PARLEY_HEADERS_TIMEOUT_MS, 10_000);
  const requestTimeoutMs = parsePositiveInt('PARLEY_REQUEST_TIMEOUT_MS', env.PARLEY_REQUEST_TIMEOUT_MS, 30_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('PARLEY_HEADERS_TIMEOUT_MS must not be longer than PARLEY_REQUEST_TIMEOUT_MS');
  }
  return Object.freeze({
    headersTimeoutMs,
    requestTimeoutMs,
    // Longer than the idle timeout of common load balancers (60 s), so they close first.
    keepAliveTimeoutMs: parsePositiveInt('PARLEY_KEEP_ALIVE_TIMEOUT_MS', env.PARLEY_KEEP_ALIVE_TIMEOUT_MS, 72_000),
    maxConnections: parsePositiveInt('PARLEY_MAX_CONNECTIONS', env.PARLEY_MAX_CONNECTIONS, 10_000),
  });
}

/** Webhook campaigns: their endpoint's limits and the pacing of their deliveries. */
export interface CampaignsConfig {
  /** Requests per 60 s to the campaign endpoints, per key and per organization. */
  readonly rateLimit: { readonly perKey: number; readonly perOrg: number };
  /** Campaign messages per second per sending number (the provider's default is 80). */
  readonly numberMps: number;
  /** A delivery whose send outcome stays unknown this long is marked failed. */
  readonly unconfirmedMs: number;
  /** Waits before sending again after the provider could not be reached (nothing went out). */
  readonly retryDelaysMs: readonly number[];
  /** Throughput (130429) or pair-rate (131056) refusals of one delivery before it is failed. */
  readonly throttleRetries: number;
}

function parseDelays(name: string, raw: string | undefined, fallback: readonly number[]): readonly number[] {
  if (raw === undefined || raw.trim() === '') return fallback;
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.some((p) => !/^\d{1,9}$/.test(p))) {
    throw new ConfigError(`${name} must be a comma-separated list of milliseconds, got "${raw}"`);
  }
  return Object.freeze(parts.map(Number));
}

function parseCampaignsConfig(env: Env): CampaignsConfig {
  return Object.freeze({
    rateLimit: Object.freeze({
      perKey: parsePositiveInt('PARLEY_CAMPAIGN_RATE_LIMIT', env.PARLEY_CAMPAIGN_RATE_LIMIT, 120),
      perOrg: parsePositiveInt('PARLEY_CAMPAIGN_RATE_LIMIT_ORG', env.PARLEY_CAMPAIGN_RATE_LIMIT_ORG, 600),
    }),
    numberMps: parsePositiveInt('PARLEY_NUMBER_MPS', env.PARLEY_NUMBER_MPS, 80),
    unconfirmedMs: parsePositiveInt('PARLEY_CAMPAIGN_UNCONFIRMED_MS', env.PARLEY_CAMPAIGN_UNCONFIRMED_MS, 3_600_000),
    retryDelaysMs: parseDelays(
      'PARLEY_CAMPAIGN_RETRY_DELAYS_MS',
      env.PARLEY_CAMPAIGN_RETRY_DELAYS_MS,
      [5_000, 30_000, 120_000, 600_000],
    ),
    throttleRetries: parsePositiveInt('PARLEY_CAMPAIGN_THROTTLE_RETRIES', env.PARLEY_CAMPAIGN_THROTTLE_RETRIES, 10),
  });
}

/** Event webhooks to the organizations' endpoints. */
export interface EventsConfig {
  /** Let endpoints resolve to private, loopback and link-local addresses (local bots, tests). */
  readonly allowPrivate: boolean;
  /** Waits before the 2nd, 3rd, ... attempt of a delivery. */
  readonly retryDelaysMs: readonly number[];
  /** Longest wait for an endpoint's answer. */
  readonly timeoutMs: number;
  /** An endpoint whose deliveries have failed for this long is disabled. */
  readonly disableAfterMs: number;
}

/** Standard Webhooks' schedule: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_EVENT_RETRY_DELAYS_MS: readonly number[] = [
  5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
];

function parseEventsConfig(env: Env): EventsConfig {
  const allow = (env.PARLEY_WEBHOOK_ALLOW_PRIVATE ?? '').trim().toLowerCase();
  if (!['', 'true', 'false', '1', '0'].includes(allow)) {
    throw new ConfigError(
      `PARLEY_WEBHOOK_ALLOW_PRIVATE must be true or false, got "${env.PARLEY_WEBHOOK_ALLOW_PRIVATE}"`,
    );
  }
  const raw = env.PARLEY_EVENT_RETRY_DELAYS_MS;
  let retryDelaysMs = DEFAULT_EVENT_RETRY_DELAYS_MS;
  if (raw !== undefined && raw.trim() !== '') {
    const parts = raw.split(',').map((p) => p.trim());
    if (parts.some((p) => !/^\d{1,9}$/.test(p))) {
      throw new ConfigError(
        `PARLEY_EVENT_RETRY_DELAYS_MS must be a comma-separated list of milliseconds, got "${raw}"`,
      );
    }
    retryDelaysMs = Object.freeze(parts.map(Number));
  }
  return Object.freeze({
    allowPrivate: allow === 'true' || allow === '1',
    retryDelaysMs,
    timeoutMs: parsePositiveInt('PARLEY_EVENT_TIMEOUT_MS', env.PARLEY_EVENT_TIMEOUT_MS, 15_000),
    disableAfterMs: parsePositiveInt(
      'PARLEY_EVENT_DISABLE_AFTER_MS',
      env.PARLEY_EVENT_DISABLE_AFTER_MS,
      5 * 24 * 60 * 60 * 1000,
    ),
  });
}

/** Flags a command passes in; each wins over its environment variable. */
export interface ConfigFlags {
  region?: string;
  regions?: string;
  port?: string | number;
  host?: string;
  data?: string;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function parseRegion(value: string): Region {
  const v = value.trim().toLowerCase();
  if ((REGIONS as readonly string[]).includes(v)) return v as Region;
  throw new ConfigError(`unknown region "${value}"; expected one of ${REGIONS.join(', ')}`);
}

function parsePositiveInt(name: string, value: string | number | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${name} must be a positive integer, got "${value}"`);
  return n;
}

function parseBoolean(name: string, value: string | undefined): boolean {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  throw new ConfigError(`${name} must be true or false, got "${value}"`);
}

function parseAtLeast(name: string, value: string | undefined, fallback: number, min: number): number {
  const n = parsePositiveInt(name, value, fallback);
  if (n < min) throw new ConfigError(`${name} must be at least ${min}, got "${value}"`);
  return n;
}

function parsePort(name: string, value: string | number | undefined, fallback: number): number {
  const n = parsePositiveInt(name, value, fallback);
  if (n > 65535) throw new ConfigError(`${name} must be a port number (1-65535), got "${value}"`);
  return n;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parseLogLevel(value: string | undefined): string {
  if (value === undefined || value === '') return 'info';
  const level = value.trim().toLowerCase();
  if (!LOG_LEVELS.includes(level)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${value}"`);
  }
  return level;
}

/** A PostgreSQL connection URL; the message never repeats the value, which may hold a password. */
function postgresUrl(name: string, value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || !['postgres:', 'postgresql:'].includes(url.protocol) || !url.hostname) {
    throw new ConfigError(`${name} must be a PostgreSQL URL such as postgres://user@127.0.0.1:5432/parley`);
  }
  return value;
}

function validUrl(name: string, value: string): string {
  try {
    const url = new URL(value);
    return url.toString().replace(/\/$/, '');
  } catch {
    throw new ConfigError(`${name} must be a URL, got "${value}"`);
  }
}

/** An http(s) address a page may link to. */
function webUrl(name: string, value: string): string {
  const url = validUrl(name, value);
  if (!/^https?:\/\//i.test(url)) throw new ConfigError(`${name} must be an http:// or https:// URL, got "${value}"`);
  return url;
}

/** The base address of a region with none configured: where it listens. */
export function defaultBaseUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Parses flags and environment once; the result is frozen and passed to whoever needs it. */
export function loadConfig(flags: ConfigFlags = {}, env: Env = process.env): Config {
  const regionList: Region[] = flags.regions
    ? flags.regions.split(',').map(parseRegion)
    : [parseRegion(flags.region ?? env.PARLEY_REGION ?? 'us')];
  if (new Set(regionList).size !== regionList.length) throw new ConfigError('--regions lists a region twice');

  const dataDir = resolve(flags.data ?? env.PARLEY_DATA_DIR ?? 'data');
  if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) {
    throw new ConfigError(`data folder "${dataDir}" is not a folder (--data, PARLEY_DATA_DIR)`);
  }
  const host = flags.host ?? env.PARLEY_HOST ?? env.HOST ?? '127.0.0.1';
  const firstPort = parsePort('port', flags.port ?? env.PARLEY_PORT ?? env.PORT, 3000);
  if (firstPort + regionList.length - 1 > 65535) throw new ConfigError('port range runs past 65535');

  const regions = regionList.map((region, i): RegionConfig => {
    const port = firstPort + i;
    const upper = region.toUpperCase();
    const baseRaw = env[`PARLEY_BASE_URL_${upper}`] ?? (regionList.length === 1 ? env.PARLEY_BASE_URL : undefined);
    const baseUrl = baseRaw ? validUrl(`PARLEY_BASE_URL_${upper}`, baseRaw) : defaultBaseUrl(host, port);
    const pgName = env[`DATABASE_URL_${upper}`] ? `DATABASE_URL_${upper}` : 'DATABASE_URL';
    const pgUrl = env[pgName] ? postgresUrl(pgName, env[pgName]) : undefined;
    const poolSize = pgUrl ? parsePositiveInt('PARLEY_PG_POOL_SIZE', env.PARLEY_PG_POOL_SIZE, 10) : 0;
    const database: DatabaseConfig = pgUrl
      ? {
          kind: 'postgres',
          url: pgUrl,
          schema: env[`PARLEY_PG_SCHEMA_${upper}`] ?? env.PARLEY_PG_SCHEMA ?? `parley_${region}`,
          poolSize,
          connectTimeoutMs: parsePositiveInt('PARLEY_PG_CONNECT_TIMEOUT_MS', env.PARLEY_PG_CONNECT_TIMEOUT_MS, 5_000),
          statementTimeoutMs: parsePositiveInt(
            'PARLEY_PG_STATEMENT_TIMEOUT_MS',
            env.PARLEY_PG_STATEMENT_TIMEOUT_MS,
            15_000,
          ),
        }
      : {
          kind: 'sqlite',
          file: resolve(dataDir, `parley-${region}.db`),
          busyTimeoutMs: parsePositiveInt('PARLEY_SQLITE_BUSY_TIMEOUT_MS', env.PARLEY_SQLITE_BUSY_TIMEOUT_MS, 5_000),
        };
    if (database.kind === 'postgres' && !/^[a-z_][a-z0-9_]{0,62}$/.test(database.schema)) {
      throw new ConfigError(`PostgreSQL schema name "${database.schema}" must be lower-case letters, digits and _`);
    }
    return Object.freeze({ region, host, port, baseUrl, database });
  });
  // Each region keeps its own data: two regions on one schema would see each other's keys and records.
  const seen = new Map<string, Region>();
  for (const { region, database: d } of regions) {
    const where = d.kind === 'sqlite' ? d.file : `${d.url} ${d.schema}`;
    const other = seen.get(where);
    if (other) {
      throw new ConfigError(
        `regions ${other} and ${region} would share ${d.kind === 'sqlite' ? d.file : `the PostgreSQL schema "${d.schema}"`}; ` +
          'set PARLEY_PG_SCHEMA_<REGION> for each region, or leave PARLEY_PG_SCHEMA unset for parley_<region>',
      );
    }
    seen.set(where, region);
  }

  return Object.freeze({
    regions: Object.freeze(regions),
    dataDir,
    logLevel: parseLogLevel(env.LOG_LEVEL),
    bodyLimit: parsePositiveInt('PARLEY_BODY_LIMIT', env.PARLEY_BODY_LIMIT, 1024 * 1024),
    http: parseHttpLimits(env),
    metrics: Object.freeze({
      enabled: parseBoolean('PARLEY_METRICS', env.PARLEY_METRICS),
      token: env.PARLEY_METRICS_TOKEN || undefined,
    }),
    redisUrl: env.REDIS_URL || undefined,
    redisPrefix: env.PARLEY_REDIS_PREFIX || 'parley',
    sendRateLimit: Object.freeze({
      perKey: parsePositiveInt('PARLEY_SEND_RATE_LIMIT', env.PARLEY_SEND_RATE_LIMIT, 600),
      perOrg: parsePositiveInt('PARLEY_SEND_RATE_LIMIT_ORG', env.PARLEY_SEND_RATE_LIMIT_ORG, 3000),
    }),
    campaigns: parseCampaignsConfig(env),
    lastUsedFlushMs: parsePositiveInt('PARLEY_LAST_USED_FLUSH_MS', env.PARLEY_LAST_USED_FLUSH_MS, 10_000),
    events: parseEventsConfig(env),
    conversations: Object.freeze({
      idleMs: parsePositiveInt('PARLEY_CONVERSATION_IDLE_MS', env.PARLEY_CONVERSATION_IDLE_MS, 24 * 60 * 60 * 1000),
      sweepMs: parseAtLeast('PARLEY_CONVERSATION_SWEEP_MS', env.PARLEY_CONVERSATION_SWEEP_MS, 60_000, 100),
    }),
    jobs: Object.freeze({
      leaseMs: parseAtLeast('PARLEY_JOB_LEASE_MS', env.PARLEY_JOB_LEASE_MS, 5_000, 1_000),
      pollMs: parseAtLeast('PARLEY_JOB_POLL_MS', env.PARLEY_JOB_POLL_MS, 500, 10),
    }),
    trustProxy: parseTrustProxy(env.PARLEY_TRUST_PROXY),
    dashboard: Object.freeze({
      sessionIdleMs:
        parsePositiveInt('PARLEY_DASHBOARD_SESSION_IDLE_MINUTES', env.PARLEY_DASHBOARD_SESSION_IDLE_MINUTES, 60) *
        60_000,
      signInLimit: Object.freeze({
        perEmail: parsePositiveInt('PARLEY_SIGNIN_LIMIT_EMAIL', env.PARLEY_SIGNIN_LIMIT_EMAIL, 5),
        perAddress: parsePositiveInt('PARLEY_SIGNIN_LIMIT_ADDRESS', env.PARLEY_SIGNIN_LIMIT_ADDRESS, 20),
        windowMs: 15 * 60_000,
      }),
      upgradeUrl: env.PARLEY_UPGRADE_URL ? webUrl('PARLEY_UPGRADE_URL', env.PARLEY_UPGRADE_URL) : undefined,
    }),
    messaging: parseMessagingConfig(
      env,
      regions.some((r) => r.database.kind === 'postgres'),
    ),
  });
}

/** Names proxy-addr (Fastify's `trustProxy`) accepts besides addresses and CIDRs. */
const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function isAddressOrCidr(entry: string): boolean {
  if (PROXY_NAMES.includes(entry)) return true;
  const [address = '', bits, ...rest] = entry.split('/');
  const family = isIP(address);
  if (!family || rest.length > 0) return false;
  if (bits === undefined) return true;
  const n = Number(bits);
  return /^\d+$/.test(bits) && n <= (family === 4 ? 32 : 128);
}

/** Unset or `false`: the socket address is the client; `true`: every proxy; `2`: hops; else addresses/CIDRs. */
function parseTrustProxy(raw: string | undefined): TrustProxy {
  const value = raw?.trim() ?? '';
  if (value === '' || value.toLowerCase() === 'false') return false;
  if (value.toLowerCase() === 'true') return true;
  if (/^\d+$/.test(value)) return parsePositiveInt('PARLEY_TRUST_PROXY', value, 1);
  const entries = value.split(',').map((e) => e.trim());
  const bad = entries.find((e) => !isAddressOrCidr(e));
  if (bad !== undefined) {
    throw new ConfigError(
      `PARLEY_TRUST_PROXY must be true, false, a number of hops, or comma-separated addresses or CIDRs, got "${bad}"`,
    );
  }
  return Object.freeze(entries);
}

/**
 * Secrets every node of a deployment must share. On SQLite (one embedded database per data folder)
 * they may be generated into the data folder; PostgreSQL means several nodes may serve the same
 * data, and per-folder secrets would make a number added on one node unusable on the others.
 */
const SHARED_SECRETS = ['PARLEY_SECRET_KEY', 'PARLEY_WEBHOOK_APP_SECRET'] as const;

function parseMessagingConfig(env: Env, onPostgres: boolean): MessagingConfig {
  const missing = SHARED_SECRETS.filter((name) => !env[name]?.trim());
  if (onPostgres && missing.length > 0) {
    throw new ConfigError(
      `${missing.join(' and ')} must be set when running on PostgreSQL (DATABASE_URL), with the same value on every ` +
        'node: make PARLEY_SECRET_KEY with `openssl rand -base64 32`; PARLEY_WEBHOOK_APP_SECRET is the provider ' +
        "app's secret, or with the built-in sandbox any value such as `openssl rand -hex 32`",
    );
  }
  const version = env.PARLEY_PROVIDER_API_VERSION || 'v25.0';
  if (!/^v\d+\.\d+$/.test(version)) {
    throw new ConfigError(`PARLEY_PROVIDER_API_VERSION must look like v25.0, got "${version}"`);
  }
  const delay = env.PARLEY_SANDBOX_STATUS_DELAY_MS;
  return Object.freeze({
    providerBaseUrl: env.PARLEY_PROVIDER_BASE_URL
      ? validUrl('PARLEY_PROVIDER_BASE_URL', env.PARLEY_PROVIDER_BASE_URL)
      : undefined,
    providerApiVersion: version,
    providerTimeoutMs: parseTimeout(env.PARLEY_PROVIDER_TIMEOUT_MS),
    secretKey: env.PARLEY_SECRET_KEY || undefined,
    webhookAppSecret: env.PARLEY_WEBHOOK_APP_SECRET || undefined,
    webhookVerifyToken: env.PARLEY_WEBHOOK_VERIFY_TOKEN || undefined,
    sandboxTemplates: parseSandboxTemplates(env.PARLEY_SANDBOX_TEMPLATES),
    sandboxStatusDelayMs:
      delay === undefined || delay === '0' ? 0 : parsePositiveInt('PARLEY_SANDBOX_STATUS_DELAY_MS', delay, 0),
    sandboxMps: env.PARLEY_SANDBOX_MPS ? parsePositiveInt('PARLEY_SANDBOX_MPS', env.PARLEY_SANDBOX_MPS, 1) : undefined,
    // On unless set to false or 0 (an empty value keeps the default).
    sandboxStatuses:
      !env.PARLEY_SANDBOX_STATUSES?.trim() || parseBoolean('PARLEY_SANDBOX_STATUSES', env.PARLEY_SANDBOX_STATUSES),
  });
}

/** Longest wait for the provider: a send in flight holds its Idempotency-Key claim that long. */
export const MAX_PROVIDER_TIMEOUT_MS = 120_000;

function parseTimeout(value: string | undefined): number {
  const ms = parsePositiveInt('PARLEY_PROVIDER_TIMEOUT_MS', value, 10_000);
  if (ms > MAX_PROVIDER_TIMEOUT_MS) {
    throw new ConfigError(
      `PARLEY_PROVIDER_TIMEOUT_MS must be at most ${MAX_PROVIDER_TIMEOUT_MS} (2 minutes), got "${value}"`,
    );
  }
  return ms;
}

/** `[{"name":"shipping","language":"en_US","header":0,"body":1}]`; counts default to 0. */
function parseSandboxTemplates(raw: string | undefined): readonly SandboxTemplate[] {
  if (!raw) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('PARLEY_SANDBOX_TEMPLATES must be a JSON array');
  }
  if (!Array.isArray(parsed)) throw new ConfigError('PARLEY_SANDBOX_TEMPLATES must be a JSON array');
  return Object.freeze(
    parsed.map((item: unknown, i): SandboxTemplate => {
      const t = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
      const count = (v: unknown) => (v === undefined ? 0 : Number.isInteger(v) && Number(v) >= 0 ? Number(v) : -1);
      const header = count(t.header);
      const body = count(t.body);
      if (typeof t.name !== 'string' || typeof t.language !== 'string' || header < 0 || body < 0) {
        throw new ConfigError(`PARLEY_SANDBOX_TEMPLATES[${i}] needs a name, a language and whole-number counts`);
      }
      return Object.freeze({ name: t.name, language: t.language, header, body });
    }),
  );
}
