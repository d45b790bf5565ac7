/** The shape of Parley's configuration: what `loadConfig` answers, frozen, and what each part is for. */
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
  readonly conversations: {
    readonly idleMs: number;
    readonly sweepMs: number;
    /** A message to the agent's hook not acknowledged this long hands the conversation to people. */
    readonly botFallbackMs: number;
  };
  /** Which proxies' `X-Forwarded-For` to believe (Fastify's `trustProxy`): false, true, hops, or addresses. */
  readonly trustProxy: TrustProxy;
  readonly messaging: MessagingConfig;
  readonly dashboard: DashboardConfig;
  readonly media: MediaConfig;
  readonly policies: PoliciesConfig;
}

/** The template catalogue, opt-out and number health. */
export interface PoliciesConfig {
  /** How often the templates and quality of every number are read again (once across the region's nodes). */
  readonly templateSyncMs: number;
  /** Refuse every template, not only marketing ones, to an end user who opted out. */
  readonly optOutStrict: boolean;
}

/** Where media is kept and for how long (photos, voice notes, documents users send and agents upload). */
export interface MediaConfig {
  readonly store: 'folder' | 's3';
  readonly s3: {
    readonly bucket: string | undefined;
    readonly endpoint: string | undefined;
    readonly region: string | undefined;
    readonly forcePathStyle: boolean;
    /** First part of every key; the region follows. */
    readonly prefix: string;
  };
  readonly retentionDays: number;
  /** How often media past its retention is deleted (once across the region's nodes). */
  readonly sweepMs: number;
  /** Waits before each new try of an inbound media download. */
  readonly downloadRetryDelaysMs: readonly number[];
  /** The sandbox serves media downloads at most this fast; unset: at once. */
  readonly sandboxBytesPerSecond: number | undefined;
}

/** The web dashboard at /dashboard. */
export interface DashboardConfig {
  /** A session unused this long ends (PARLEY_DASHBOARD_SESSION_IDLE_MINUTES, default 60). */
  readonly sessionIdleMs: number;
  /** A session ends this long after sign-in, used or not (PARLEY_DASHBOARD_SESSION_MAX_HOURS, default 12). */
  readonly sessionMaxMs: number;
  /** scrypt cost of password hashes, log2 of N (PARLEY_PASSWORD_HASH_COST, default 17). */
  readonly passwordCost: number;
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

/** Flags a command passes in; each wins over its environment variable. */
export interface ConfigFlags {
  region?: string;
  regions?: string;
  port?: string | number;
  host?: string;
  data?: string;
}
