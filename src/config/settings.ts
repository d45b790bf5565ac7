/**
 * Every setting Parley reads from the environment, in one list: its variable, the kind of value
 * (`type`: what counts as unset, how a value is checked, what a bad one says), its default, and the
 * sentence of the documentation. `loadConfig` (parse.ts, regions.ts) reads each setting through this
 * list, so a default lives here only; docs/configuration.md is generated from it (docs.ts, written
 * by `node --import tsx scripts/config-docs.ts`). Tests check that every variable the code reads is
 * listed, that each default is what `loadConfig` answers when nothing is set, and that the page is
 * up to date.
 */
import { media } from './settings-media.js';
import { policies } from './settings-policies.js';
import type { SandboxTemplate } from './types.js';
import {
  anyText,
  apiVersion,
  atLeast,
  atMost,
  between,
  boolean,
  logLevel,
  milliseconds,
  port,
  positiveInt,
  postgresUrl,
  region,
  type Setting,
  sandboxTemplates,
  schemaName,
  text,
  trustProxy,
  url,
  webUrl,
  zeroOrPositiveInt,
} from './values.js';

type Settings = Record<string, Setting>;

/** Standard Webhooks' schedule: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_EVENT_RETRY_DELAYS_MS: readonly number[] = Object.freeze([
  5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
]);

/** Longest wait for the provider: a send in flight holds its Idempotency-Key claim that long. */
export const MAX_PROVIDER_TIMEOUT_MS = 120_000;

const NONE: readonly SandboxTemplate[] = Object.freeze([]);

const server = {
  PARLEY_REGION: {
    type: region,
    default: 'us' as const,
    doc: 'region served: `us`, `eu`, `in` or `qa` (`--region`; `--regions us,eu` for several)',
  },
  PARLEY_PORT: {
    names: ['PARLEY_PORT', 'PORT'],
    type: port,
    default: 3000,
    label: 'port',
    doc: 'port (of the first region with `--regions`; the others follow)',
  },
  PARLEY_HOST: {
    names: ['PARLEY_HOST', 'HOST'],
    type: anyText,
    default: '127.0.0.1',
    doc: 'address to listen on',
  },
  PARLEY_BASE_URL: {
    names: ['PARLEY_BASE_URL_<REGION>', 'PARLEY_BASE_URL'],
    type: url,
    default: undefined,
    shown: '`http://HOST:PORT`',
    doc: 'public base address of a region, shown in its `/api/openapi.json` `servers`; `PARLEY_BASE_URL` applies only when one region is served',
  },
  PARLEY_BODY_LIMIT: {
    type: positiveInt,
    default: 1024 * 1024,
    doc: 'largest request body in bytes (over it: 413)',
  },
  LOG_LEVEL: {
    type: logLevel,
    default: 'info',
    doc: 'pino log level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
  },
  PARLEY_LAST_USED_FLUSH_MS: {
    type: positiveInt,
    default: 10_000,
    doc: 'how often buffered "last used" times of keys are written',
  },
  PARLEY_HEADERS_TIMEOUT_MS: {
    type: positiveInt,
    default: 10_000,
    doc: "longest wait for a request's headers; then 408 and the connection is closed",
  },
  PARLEY_REQUEST_TIMEOUT_MS: {
    type: positiveInt,
    default: 30_000,
    doc: 'longest wait for a whole request, body included; then 408',
  },
  PARLEY_KEEP_ALIVE_TIMEOUT_MS: {
    type: positiveInt,
    default: 72_000,
    doc: "how long an idle kept-alive connection stays open (longer than a balancer's 60 s)",
  },
  PARLEY_MAX_CONNECTIONS: {
    type: positiveInt,
    default: 10_000,
    doc: 'open connections at most; more are refused until some close',
  },
  PARLEY_TRUST_PROXY: {
    type: trustProxy,
    default: false,
    shown: 'unset',
    doc: 'believe `X-Forwarded-For` from: `true` (any proxy), a number of hops, or comma-separated addresses/CIDRs',
  },
  PARLEY_METRICS: {
    type: boolean,
    default: false,
    doc: 'serve Prometheus metrics at `GET /metrics`',
  },
  PARLEY_METRICS_TOKEN: {
    type: text,
    default: undefined,
    doc: 'bearer token `GET /metrics` requires, when set',
  },
} satisfies Settings;

const storage = {
  PARLEY_DATA_DIR: {
    type: anyText,
    default: 'data',
    shown: '`./data`',
    doc: 'folder of the SQLite databases (`parley-<region>.db`, created if missing; `--data`)',
  },
  DATABASE_URL: {
    names: ['DATABASE_URL', 'DATABASE_URL_<REGION>'],
    type: postgresUrl,
    default: undefined,
    doc:
      'PostgreSQL connection URL; each region uses its own schema `parley_<region>`. A database on the same ' +
      'machine is best reached through its Unix socket: `postgresql://user@%2Fvar%2Frun%2Fpostgresql/db`. Server ' +
      'settings in its `options` parameter (or in `PGOPTIONS`), such as `?options=-c%20lock_timeout%3D5000`, apply to ' +
      'every connection; `search_path` and `statement_timeout` are always the region schema and ' +
      '`PARLEY_PG_STATEMENT_TIMEOUT_MS`',
  },
  PGOPTIONS: {
    type: text,
    default: undefined,
    readBy: 'src/db/database.ts, when it connects',
    doc:
      'PostgreSQL server settings for every connection (`-c name=value ...`), as libpq reads it, when the ' +
      "URL has no `options` parameter of its own; Parley's `search_path` and `statement_timeout` still apply",
  },
  PARLEY_PG_SCHEMA: {
    names: ['PARLEY_PG_SCHEMA_<REGION>', 'PARLEY_PG_SCHEMA'],
    type: schemaName,
    default: undefined,
    shown: '`parley_<region>`',
    doc: 'PostgreSQL schema name; two regions never share one, so with several regions use the per-region form',
  },
  PARLEY_PG_POOL_SIZE: {
    type: positiveInt,
    default: 10,
    doc: 'PostgreSQL connections per region and process',
  },
  REDIS_URL: {
    type: text,
    default: undefined,
    doc: 'Redis shared by several processes (rate limits)',
  },
  PARLEY_PG_CONNECT_TIMEOUT_MS: {
    type: positiveInt,
    default: 5_000,
    doc: 'longest wait for a PostgreSQL connection; then the request gets 503',
  },
  PARLEY_PG_STATEMENT_TIMEOUT_MS: {
    type: positiveInt,
    default: 15_000,
    doc: 'longest a PostgreSQL statement may run (`statement_timeout`); then 503',
  },
  PARLEY_SQLITE_BUSY_TIMEOUT_MS: {
    type: positiveInt,
    default: 5_000,
    doc: "longest a SQLite write waits for another connection's lock; then 503",
  },
  PARLEY_JOB_LEASE_MS: {
    type: atLeast(1_000),
    default: 5_000,
    doc: 'lease of a running background job (at least 1000); a job of a node that died runs again once it lapses',
  },
  PARLEY_JOB_POLL_MS: {
    type: atLeast(10),
    default: 500,
    doc: 'how often a node looks for due background jobs it did not store itself',
  },
  PARLEY_REDIS_PREFIX: {
    type: text,
    default: 'parley',
    doc: 'first segment of every Redis key, so deployments can share a Redis',
  },
} satisfies Settings;

const limits = {
  PARLEY_SEND_RATE_LIMIT: {
    type: positiveInt,
    default: 600,
    doc: 'requests per API key per 60 s to the send and trigger endpoints (429 past it)',
  },
  PARLEY_SEND_RATE_LIMIT_ORG: {
    type: positiveInt,
    default: 3000,
    doc: 'the same per organization',
  },
} satisfies Settings;

const messaging = {
  PARLEY_PROVIDER_BASE_URL: {
    type: url,
    default: undefined,
    shown: 'unset: built-in sandbox',
    doc: 'Cloud API base address, e.g. `https://graph.facebook.com`',
  },
  PARLEY_PROVIDER_API_VERSION: {
    type: apiVersion,
    default: 'v25.0',
    doc: 'API version in the send path (`vNN.N`)',
  },
  PARLEY_PROVIDER_TIMEOUT_MS: {
    type: atMost(MAX_PROVIDER_TIMEOUT_MS, '2 minutes'),
    default: 10_000,
    doc: "timeout of each wait of a send (connecting to the provider, its answer's headers, then its whole body), at most `120000`; past it: 502, outcome unknown. An idempotent send's in-flight claim lasts three times this plus one minute (at least 5 minutes), so no setting lets a retry take over a send still waiting",
  },
  PARLEY_SECRET_KEY: {
    type: text,
    default: undefined,
    shown: '`<data>/secret.key`, generated (on SQLite; required on PostgreSQL)',
    doc: '32 bytes, base64 or hex: seals access tokens',
  },
  PARLEY_WEBHOOK_APP_SECRET: {
    type: text,
    default: undefined,
    shown: '`<data>/webhook-app-secret`, generated (on SQLite; required on PostgreSQL)',
    doc: 'app secret of the webhook signatures',
  },
  PARLEY_WEBHOOK_VERIFY_TOKEN: {
    type: text,
    default: undefined,
    shown: 'unset: handshake refused',
    doc: 'verify token of the GET handshake',
  },
  PARLEY_SANDBOX_TEMPLATES: {
    type: sandboxTemplates,
    default: NONE,
    doc: 'extra sandbox templates, JSON array of `{name, language, header, body}`',
  },
  PARLEY_SANDBOX_STATUS_DELAY_MS: {
    type: zeroOrPositiveInt,
    default: 0,
    doc: 'pause before each sandbox status webhook',
  },
  PARLEY_SANDBOX_STATUSES: {
    type: boolean,
    default: true,
    doc: '`false`: the sandbox sends no status webhooks (for send benchmarks)',
  },
  PARLEY_SANDBOX_MPS: {
    type: positiveInt,
    default: undefined,
    doc: 'sends per second per number the sandbox accepts before answering 130429',
  },
} satisfies Settings;

const events = {
  PARLEY_WEBHOOK_ALLOW_PRIVATE: {
    type: boolean,
    default: false,
    doc: 'let event endpoints resolve to private, loopback and link-local addresses',
  },
  PARLEY_EVENT_RETRY_DELAYS_MS: {
    type: milliseconds,
    default: DEFAULT_EVENT_RETRY_DELAYS_MS,
    doc: 'waits before each retry of an event delivery',
  },
  PARLEY_EVENT_TIMEOUT_MS: {
    type: positiveInt,
    default: 15_000,
    doc: "longest wait for an endpoint's answer",
  },
  PARLEY_EVENT_DISABLE_AFTER_MS: {
    type: positiveInt,
    default: 5 * 24 * 60 * 60 * 1000,
    note: '5 days',
    doc: 'an endpoint failing this long is disabled',
  },
} satisfies Settings;

const conversations = {
  PARLEY_CONVERSATION_IDLE_MS: {
    type: positiveInt,
    default: 24 * 60 * 60 * 1000,
    note: '24 hours',
    doc: 'a conversation with no message for this long is closed',
  },
  PARLEY_CONVERSATION_SWEEP_MS: {
    type: atLeast(100),
    default: 60_000,
    doc: 'how often idle conversations are closed, by one node of the region each time (at least 100)',
  },
  PARLEY_BOT_FALLBACK_MS: {
    type: positiveInt,
    default: 120_000,
    note: '2 minutes',
    doc: "a conversation goes to people (the inbox) when the agent's hook has not acknowledged an end user's message within this time; the delivery keeps being retried",
  },
} satisfies Settings;

const campaigns = {
  PARLEY_CAMPAIGN_RATE_LIMIT: {
    type: positiveInt,
    default: 120,
    doc: 'requests per campaign key per 60 s to `POST /api/campaigns/{id}/webhook`',
  },
  PARLEY_CAMPAIGN_RATE_LIMIT_ORG: {
    type: positiveInt,
    default: 600,
    doc: 'the same per organization',
  },
  PARLEY_NUMBER_MPS: {
    type: positiveInt,
    default: 80,
    doc: 'messages per second per sending number for campaigns; interactive sends are never held back but take their share (shared across nodes through Redis)',
  },
  PARLEY_CAMPAIGN_UNCONFIRMED_MS: {
    type: positiveInt,
    default: 3_600_000,
    note: '1 hour',
    doc: 'a campaign send whose outcome stays unknown this long is marked failed',
  },
  PARLEY_CAMPAIGN_RETRY_DELAYS_MS: {
    type: milliseconds,
    default: Object.freeze([5_000, 30_000, 120_000, 600_000]),
    doc: 'waits before sending again when the provider could not be reached',
  },
  PARLEY_CAMPAIGN_THROTTLE_RETRIES: {
    type: positiveInt,
    default: 10,
    doc: 'throughput (130429) or pair-rate (131056) refusals of one delivery before it fails',
  },
} satisfies Settings;

const dashboard = {
  PARLEY_DASHBOARD_SESSION_IDLE_MINUTES: {
    type: positiveInt,
    default: 60,
    doc: 'a dashboard session unused this long ends',
  },
  PARLEY_DASHBOARD_SESSION_MAX_HOURS: {
    type: positiveInt,
    default: 12,
    doc: 'a dashboard session ends this long after sign-in, however busy',
  },
  PARLEY_PASSWORD_HASH_COST: {
    type: between(10, 20),
    default: 17,
    doc: 'scrypt cost of dashboard password hashes, as a power of two (17: N = 131072, 128 MiB and ~0.2 s a hash); older hashes are raised at the next sign-in; lower it only for tests',
  },
  PARLEY_SIGNIN_LIMIT_EMAIL: {
    type: positiveInt,
    default: 5,
    doc: 'failed dashboard sign-ins per email address within 15 minutes before sign-in is refused (429)',
  },
  PARLEY_SIGNIN_LIMIT_ADDRESS: {
    type: positiveInt,
    default: 20,
    doc: 'the same per client address',
  },
  PARLEY_UPGRADE_URL: {
    type: webUrl,
    default: undefined,
    doc: "billing page the dashboard's *Upgrade* button opens; unset: an owner upgrades after a confirmation",
  },
} satisfies Settings;

/** The page's sections, in order, each with its settings in the order the page lists them. */
export const SECTIONS = [
  { title: 'Server and HTTP', settings: server },
  { title: 'Storage, Redis and background jobs', settings: storage },
  { title: 'Rate limits', settings: limits },
  { title: 'Messaging provider and sandbox', settings: messaging },
  { title: 'Event webhooks', settings: events },
  { title: 'Conversations', settings: conversations },
  { title: 'Campaigns', settings: campaigns },
  { title: 'Dashboard', settings: dashboard },
  { title: 'Media', settings: media },
  { title: 'Templates, opt-out and number health', settings: policies },
] as const;

export const SETTINGS = {
  ...server,
  ...storage,
  ...limits,
  ...messaging,
  ...events,
  ...conversations,
  ...campaigns,
  ...dashboard,
  ...media,
  ...policies,
};
export type SettingName = keyof typeof SETTINGS;
