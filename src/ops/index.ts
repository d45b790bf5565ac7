/** The ops feature's public surface: the Prometheus metrics other parts of a region record into. */
export { Metrics, type TimedProvider } from './metrics.js';
