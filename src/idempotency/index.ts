/**
 * The idempotency feature's public surface: the route hooks that make a POST idempotent under an
 * `Idempotency-Key` header, and the schemas of that header and of the replay header.
 */
export * from './idempotency.hook.js';
