import { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

/**
 * Query parameters whose value must never reach a log line (a webhook's `hub.verify_token`, a key
 * or a token someone put in a URL by mistake).
 */
const SECRET_QUERY = /([?&][^=&#]*(?:token|secret|key|password|passwd|signature|auth)[^=&#]*=)[^&#]*/gi;

/** The URL as logged: secret-looking query values replaced (only a URL with a query is scanned). */
export function loggableUrl(url: string): string {
  return url.includes('?') ? url.replace(SECRET_QUERY, '$1[redacted]') : url;
}

/**
 * One log line per request, written when the answer is finished: request ID, method, URL (secret
 * query values redacted), status and time. Its fields are fixed and carry nothing secret, so the
 * line is written by a logger without redaction; the logger's redaction list applies to everything
 * else. Below `info` the line is not even built. Fastify's own pair of lines ("incoming request",
 * "request completed") is replaced by it.
 */
export class RequestLogController extends LogController {
  /** The logger of request lines, or undefined when `info` is below the configured level. */
  private readonly line: Logger | undefined;

  constructor(logger: Logger) {
    super({});
    this.line = logger.isLevelEnabled('info') ? logger.child({}, { redact: [] }) : undefined;
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (!error && !this.line) return; // below the level: nothing is built
    const fields = {
      reqId: request.id,
      req: { method: request.method, url: loggableUrl(request.url), remoteAddress: request.ip },
      res: { statusCode: reply.statusCode },
      responseTime: reply.elapsedTime,
    };
    if (error) request.log.error({ ...fields, err: error }, 'request errored');
    else this.line?.info(fields, 'request completed');
  }
}

type LogMethod = (obj: unknown, msg?: string, ...args: unknown[]) => void;
const LEVELS: readonly Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/**
 * `request.log` without a child logger per request: the child (bound to the request ID, and paying
 * the redaction of its bindings) is made only when something is logged through it, which a
 * request that goes well never does. A call below the configured level costs one level check.
 */
class LazyRequestLogger {
  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The child, made on first use. */
  logger(): Logger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger().level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.logger().child(bindings, options);
  }

  silent(): void {}

  isLevelEnabled(level: string): boolean {
    return (this.made ?? this.parent).isLevelEnabled(level);
  }
}

for (const level of LEVELS) {
  Object.defineProperty(LazyRequestLogger.prototype, level, {
    value: function (this: LazyRequestLogger, ...args: Parameters<LogMethod>) {
      if (!this.isLevelEnabled(level)) return;
      (this.logger()[level] as LogMethod)(...args);
    },
  });
}

/** Fastify's `childLoggerFactory`: a lazy child, unless the route sets a log level of its own. */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level) return logger.child(bindings, options);
  return new LazyRequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
}
