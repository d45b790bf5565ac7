import { type Logger, pino } from 'pino';
import type { Config } from '../config.js';

/** Paths that must never reach a log line. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-hub-signature-256"]',
  'headers.authorization',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.authorization',
  '*.accessToken',
  '*.access_token',
  '*.apiKey',
  '*.key',
  '*.password',
  '*.token',
  '*.secret',
  '*.connectionString',
  // `*.x` matches one level down only; the same names at the top of a log object too.
  'authorization',
  'apiKey',
  'key',
  'token',
  'accessToken',
  'access_token',
  'password',
  'secret',
  'connectionString',
];

/** The process's logger: the configured level, secrets redacted, the given bindings on every line. */
export function createLogger(config: Pick<Config, 'logLevel'>, bindings: Record<string, string> = {}): Logger {
  return pino({
    level: config.logLevel,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid, ...bindings },
  });
}
