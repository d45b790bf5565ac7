/**
 * Parley's configuration, read once at start-up: what the rest of the code imports. The parts live
 * in src/config/: the list of settings (settings.ts: name, kind of value, default, the sentence of
 * the docs), the kinds of value and their messages (values.ts), the shape of the result (types.ts),
 * the regions served (regions.ts), `loadConfig` (parse.ts) and the generated page (docs.ts).
 */
export { loadConfig } from './config/parse.js';
export { defaultBaseUrl } from './config/regions.js';
export { DEFAULT_EVENT_RETRY_DELAYS_MS, MAX_PROVIDER_TIMEOUT_MS } from './config/settings.js';
export {
  type CampaignsConfig,
  type Config,
  type ConfigFlags,
  type DashboardConfig,
  type DatabaseConfig,
  type EventsConfig,
  type HttpLimits,
  type MediaConfig,
  type MessagingConfig,
  REGION_NAMES,
  REGIONS,
  type Region,
  type RegionConfig,
  type SandboxTemplate,
  type TrustProxy,
} from './config/types.js';
export { ConfigError } from './config/values.js';
