/**
 * Every setting Parley reads from the environment, in one list: docs/configuration.md is generated
 * from it (`node --import tsx scripts/config-docs.ts`), and a test checks that every variable the
 * code reads is here and that the page is up to date. Parsing and validation live in config.ts.
 */
export interface Setting {
  /** The variable, and its other spellings (`PORT` for `PARLEY_PORT`, per-region forms). */
  readonly names: readonly string[];
  readonly section: SettingSection;
  /** Markdown. */
  readonly default: string;
  /** Markdown. */
  readonly description: string;
}

export const SECTIONS = {
  server: 'Server and HTTP',
  storage: 'Storage, Redis and background jobs',
  limits: 'Rate limits',
  messaging: 'Messaging provider and sandbox',
  events: 'Event webhooks',
  conversations: 'Conversations',
  campaigns: 'Campaigns',
  dashboard: 'Dashboard',
} as const;
export type SettingSection = keyof typeof SECTIONS;

export const SETTINGS: readonly Setting[] = [
  {
    names: ['PARLEY_PROVIDER_BASE_URL'],
    section: 'messaging',
    default: 'unset: built-in sandbox',
    description: 'Cloud API base address, e.g. `https://graph.facebook.com`',
  },
  {
    names: ['PARLEY_PROVIDER_API_VERSION'],
    section: 'messaging',
    default: '`v25.0`',
    description: 'API version in the send path (`vNN.N`)',
  },
  {
    names: ['PARLEY_PROVIDER_TIMEOUT_MS'],
    section: 'messaging',
    default: '`10000`',
    description:
      "timeout of each wait of a send (connecting to the provider, its answer's headers, then its whole body), at most `120000`; past it: 502, outcome unknown. An idempotent send's in-flight claim lasts three times this plus one minute (at least 5 minutes), so no setting lets a retry take over a send still waiting",
  },
  {
    names: ['PARLEY_SECRET_KEY'],
    section: 'messaging',
    default: '`<data>/secret.key`, generated (on SQLite; required on PostgreSQL)',
    description: '32 bytes, base64 or hex: seals access tokens',
  },
  {
    names: ['PARLEY_WEBHOOK_APP_SECRET'],
    section: 'messaging',
    default: '`<data>/webhook-app-secret`, generated (on SQLite; required on PostgreSQL)',
    description: 'app secret of the webhook signatures',
  },
  {
    names: ['PARLEY_WEBHOOK_VERIFY_TOKEN'],
    section: 'messaging',
    default: 'unset: handshake refused',
    description: 'verify token of the GET handshake',
  },
  {
    names: ['PARLEY_SANDBOX_TEMPLATES'],
    section: 'messaging',
    default: 'none',
    description: 'extra sandbox templates, JSON array of `{name, language, header, body}`',
  },
  {
    names: ['PARLEY_SANDBOX_STATUS_DELAY_MS'],
    section: 'messaging',
    default: '`0`',
    description: 'pause before each sandbox status webhook',
  },
  {
    names: ['PARLEY_SANDBOX_STATUSES'],
    section: 'messaging',
    default: '`true`',
    description: '`false`: the sandbox sends no status webhooks (for send benchmarks)',
  },
  {
    names: ['PARLEY_SANDBOX_MPS'],
    section: 'messaging',
    default: 'unset',
    description: 'sends per second per number the sandbox accepts before answering 130429',
  },
  {
    names: ['PARLEY_REGION'],
    section: 'server',
    default: '`us`',
    description: 'region served: `us`, `eu`, `in` or `qa` (`--region`; `--regions us,eu` for several)',
  },
  {
    names: ['PARLEY_PORT', 'PORT'],
    section: 'server',
    default: '`3000`',
    description: 'port (of the first region with `--regions`; the others follow)',
  },
  {
    names: ['PARLEY_HOST', 'HOST'],
    section: 'server',
    default: '`127.0.0.1`',
    description: 'address to listen on',
  },
  {
    names: ['PARLEY_BASE_URL_<REGION>', 'PARLEY_BASE_URL'],
    section: 'server',
    default: '`http://HOST:PORT`',
    description:
      'public base address of a region, shown in its `/api/openapi.json` `servers`; `PARLEY_BASE_URL` applies only when one region is served',
  },
  {
    names: ['PARLEY_DATA_DIR'],
    section: 'storage',
    default: '`./data`',
    description: 'folder of the SQLite databases (`parley-<region>.db`, created if missing; `--data`)',
  },
  {
    names: ['DATABASE_URL', 'DATABASE_URL_<REGION>'],
    section: 'storage',
    default: 'unset',
    description:
      'PostgreSQL connection URL; each region uses its own schema `parley_<region>`. A database on the same ' +
      'machine is best reached through its Unix socket: `postgresql://user@%2Fvar%2Frun%2Fpostgresql/db`. Server ' +
      'settings in its `options` parameter (or in `PGOPTIONS`), such as `?options=-c%20lock_timeout%3D5000`, apply to ' +
      'every connection; `search_path` and `statement_timeout` are always the region schema and ' +
      '`PARLEY_PG_STATEMENT_TIMEOUT_MS`',
  },
  {
    names: ['PGOPTIONS'],
    section: 'storage',
    default: 'unset',
    description:
      'PostgreSQL server settings for every connection (`-c name=value ...`), as libpq reads it, when the ' +
      "URL has no `options` parameter of its own; Parley's `search_path` and `statement_timeout` still apply",
  },
  {
    names: ['PARLEY_PG_SCHEMA_<REGION>', 'PARLEY_PG_SCHEMA'],
    section: 'storage',
    default: '`parley_<region>`',
    description: 'PostgreSQL schema name; two regions never share one, so with several regions use the per-region form',
  },
  {
    names: ['PARLEY_PG_POOL_SIZE'],
    section: 'storage',
    default: '`10`',
    description: 'PostgreSQL connections per region and process',
  },
  {
    names: ['REDIS_URL'],
    section: 'storage',
    default: 'unset',
    description: 'Redis shared by several processes (rate limits)',
  },
  {
    names: ['PARLEY_BODY_LIMIT'],
    section: 'server',
    default: '`1048576`',
    description: 'largest request body in bytes (over it: 413)',
  },
  {
    names: ['LOG_LEVEL'],
    section: 'server',
    default: '`info`',
    description: 'pino log level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
  },
  {
    names: ['PARLEY_LAST_USED_FLUSH_MS'],
    section: 'server',
    default: '`10000`',
    description: 'how often buffered "last used" times of keys are written',
  },
  {
    names: ['PARLEY_HEADERS_TIMEOUT_MS'],
    section: 'server',
    default: '`10000`',
    description: "longest wait for a request's headers; then 408 and the connection is closed",
  },
  {
    names: ['PARLEY_REQUEST_TIMEOUT_MS'],
    section: 'server',
    default: '`30000`',
    description: 'longest wait for a whole request, body included; then 408',
  },
  {
    names: ['PARLEY_KEEP_ALIVE_TIMEOUT_MS'],
    section: 'server',
    default: '`72000`',
    description: "how long an idle kept-alive connection stays open (longer than a balancer's 60 s)",
  },
  {
    names: ['PARLEY_MAX_CONNECTIONS'],
    section: 'server',
    default: '`10000`',
    description: 'open connections at most; more are refused until some close',
  },
  {
    names: ['PARLEY_PG_CONNECT_TIMEOUT_MS'],
    section: 'storage',
    default: '`5000`',
    description: 'longest wait for a PostgreSQL connection; then the request gets 503',
  },
  {
    names: ['PARLEY_PG_STATEMENT_TIMEOUT_MS'],
    section: 'storage',
    default: '`15000`',
    description: 'longest a PostgreSQL statement may run (`statement_timeout`); then 503',
  },
  {
    names: ['PARLEY_SQLITE_BUSY_TIMEOUT_MS'],
    section: 'storage',
    default: '`5000`',
    description: "longest a SQLite write waits for another connection's lock; then 503",
  },
  {
    names: ['PARLEY_TRUST_PROXY'],
    section: 'server',
    default: 'unset',
    description:
      'believe `X-Forwarded-For` from: `true` (any proxy), a number of hops, or comma-separated addresses/CIDRs',
  },
  {
    names: ['PARLEY_METRICS'],
    section: 'server',
    default: '`false`',
    description: 'serve Prometheus metrics at `GET /metrics`',
  },
  {
    names: ['PARLEY_METRICS_TOKEN'],
    section: 'server',
    default: 'unset',
    description: 'bearer token `GET /metrics` requires, when set',
  },
  {
    names: ['PARLEY_JOB_LEASE_MS'],
    section: 'storage',
    default: '`5000`',
    description:
      'lease of a running background job (at least 1000); a job of a node that died runs again once it lapses',
  },
  {
    names: ['PARLEY_JOB_POLL_MS'],
    section: 'storage',
    default: '`500`',
    description: 'how often a node looks for due background jobs it did not store itself',
  },
  {
    names: ['PARLEY_WEBHOOK_ALLOW_PRIVATE'],
    section: 'events',
    default: '`false`',
    description: 'let event endpoints resolve to private, loopback and link-local addresses',
  },
  {
    names: ['PARLEY_EVENT_RETRY_DELAYS_MS'],
    section: 'events',
    default: '`5000,300000,1800000,7200000,18000000,36000000,36000000`',
    description: 'waits before each retry of an event delivery',
  },
  {
    names: ['PARLEY_EVENT_TIMEOUT_MS'],
    section: 'events',
    default: '`15000`',
    description: "longest wait for an endpoint's answer",
  },
  {
    names: ['PARLEY_EVENT_DISABLE_AFTER_MS'],
    section: 'events',
    default: '`432000000` (5 days)',
    description: 'an endpoint failing this long is disabled',
  },
  {
    names: ['PARLEY_CONVERSATION_IDLE_MS'],
    section: 'conversations',
    default: '`86400000` (24 hours)',
    description: 'a conversation with no message for this long is closed',
  },
  {
    names: ['PARLEY_CONVERSATION_SWEEP_MS'],
    section: 'conversations',
    default: '`60000`',
    description: 'how often idle conversations are closed, by one node of the region each time (at least 100)',
  },
  {
    names: ['PARLEY_CAMPAIGN_RATE_LIMIT'],
    section: 'campaigns',
    default: '`120`',
    description: 'requests per campaign key per 60 s to `POST /api/campaigns/{id}/webhook`',
  },
  {
    names: ['PARLEY_CAMPAIGN_RATE_LIMIT_ORG'],
    section: 'campaigns',
    default: '`600`',
    description: 'the same per organization',
  },
  {
    names: ['PARLEY_NUMBER_MPS'],
    section: 'campaigns',
    default: '`80`',
    description:
      'messages per second per sending number for campaigns; interactive sends are never held back but take their share (shared across nodes through Redis)',
  },
  {
    names: ['PARLEY_CAMPAIGN_UNCONFIRMED_MS'],
    section: 'campaigns',
    default: '`3600000` (1 hour)',
    description: 'a campaign send whose outcome stays unknown this long is marked failed',
  },
  {
    names: ['PARLEY_CAMPAIGN_RETRY_DELAYS_MS'],
    section: 'campaigns',
    default: '`5000,30000,120000,600000`',
    description: 'waits before sending again when the provider could not be reached',
  },
  {
    names: ['PARLEY_CAMPAIGN_THROTTLE_RETRIES'],
    section: 'campaigns',
    default: '`10`',
    description: 'throughput (130429) or pair-rate (131056) refusals of one delivery before it fails',
  },
  {
    names: ['PARLEY_DASHBOARD_SESSION_IDLE_MINUTES'],
    section: 'dashboard',
    default: '`60`',
    description: 'a dashboard session unused this long ends',
  },
  {
    names: ['PARLEY_SIGNIN_LIMIT_EMAIL'],
    section: 'dashboard',
    default: '`5`',
    description: 'failed dashboard sign-ins per email address within 15 minutes before sign-in is refused (429)',
  },
  {
    names: ['PARLEY_SIGNIN_LIMIT_ADDRESS'],
    section: 'dashboard',
    default: '`20`',
    description: 'the same per client address',
  },
  {
    names: ['PARLEY_UPGRADE_URL'],
    section: 'dashboard',
    default: 'unset',
    description: "billing page the dashboard's *Upgrade* button opens; unset: an owner upgrades after a confirmation",
  },
  {
    names: ['PARLEY_SEND_RATE_LIMIT'],
    section: 'limits',
    default: '`600`',
    description: 'requests per API key per 60 s to the send and trigger endpoints (429 past it)',
  },
  {
    names: ['PARLEY_SEND_RATE_LIMIT_ORG'],
    section: 'limits',
    default: '`3000`',
    description: 'the same per organization',
  },
  {
    names: ['PARLEY_REDIS_PREFIX'],
    section: 'storage',
    default: '`parley`',
    description: 'first segment of every Redis key, so deployments can share a Redis',
  },
];
