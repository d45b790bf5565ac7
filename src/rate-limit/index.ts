/**
 * The rate-limit feature's public surface: the send rate limiter a region builds, and the route
 * hook and response headers of the routes it limits.
 */
export * from './rate-limit.hook.js';
export * from './send-rate-limiter.js';
