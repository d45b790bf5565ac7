/**
 * What other features use of authentication: who is calling and what a key may reach, the key
 * epoch protocol's wrapper for a read that confirms a cached key, and the cache that keeps values
 * beside the keys.
 */
export {
  assertAgentAllowed,
  assertCampaignKey,
  type KeyRecord,
  type Principal,
  targetAgentId,
} from './auth.js';
export { keyCacheOf } from './key-cache.js';
export { type KeyEpochConfirmer, readConfirmingKey } from './key-epoch.js';
