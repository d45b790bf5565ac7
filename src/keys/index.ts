/**
 * The keys feature's public surface beyond its service (`key.service.ts`): the permissions and
 * scopes a key carries, and the key's text format (generating, hashing and parsing a key).
 */
export * from './key-format.js';
export * from './permissions.js';
