import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { databaseUnavailable, isDatabaseUnavailable } from '../db/db-errors.js';
import { isStorageFailure, storageFailed, storageUnavailable } from '../db/storage-health.js';
import { clip } from '../shared/clip.js';
import { AppError, isAppError } from '../shared/errors.js';
import { SECURITY_HEADERS } from './security-headers.js';

/**
 * Route families and their error envelopes (spec section 7):
 *  - `channel`: channel send, triggers, messages, sandbox: `{"success": false, "error": "<sentence>"}`
 *  - `coded`: end users and everything else: `{"error": "<sentence>", "code": "<CODE>"}`
 */
export type Family = 'channel' | 'coded';

export const ChannelError = Type.Object(
  { success: Type.Literal(false), error: Type.String({ description: 'A sentence saying what went wrong.' }) },
  { $id: 'ChannelError', description: 'Error envelope of the trigger and channel endpoints.' },
);

export const CodedError = Type.Object(
  {
    error: Type.String({ description: 'A sentence saying what went wrong.' }),
    code: Type.String({ description: 'A stable error code, e.g. INVALID_BODY, NOT_FOUND.' }),
    field: Type.Optional(Type.String({ description: 'The request field the error is about.' })),
    existingId: Type.Optional(Type.String({ description: 'The `_id` of the record a duplicate collides with.' })),
  },
  { $id: 'CodedError', description: 'Error envelope of the end-user endpoints and of unknown routes.' },
);

const CHANNEL_PREFIXES = [
  '/api/channels',
  '/api/triggers',
  '/api/messages',
  '/api/sandbox',
  '/api/conversations',
  '/api/campaigns',
  '/api/media',
  '/api/templates',
];

export function familyOfUrl(url: string): Family {
  return CHANNEL_PREFIXES.some((p) => url === p || url.startsWith(`${p}/`) || url.startsWith(`${p}?`))
    ? 'channel'
    : 'coded';
}

export function familyOf(request: FastifyRequest): Family {
  return request.routeOptions.config.family ?? familyOfUrl(request.url);
}

export function envelope(family: Family, err: AppError): Record<string, unknown> {
  if (family === 'channel') return { success: false, error: err.message };
  return { error: err.message, code: err.code, ...err.details };
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request: invalid input.',
  401: 'Missing, invalid or revoked API key.',
  403: 'The key is not allowed to do this.',
  404: 'Not found.',
  405: 'Method not allowed on this route.',
  409: 'Conflict.',
  413: 'Request body too large.',
  422: 'Unprocessable request.',
  429: 'Rate limit exceeded; retry after the number of seconds in Retry-After.',
  500: 'Unexpected server failure; the body never carries details (they are logged with the request ID).',
  502: 'The messaging provider could not be reached or failed.',
  503: 'The server is shutting down; retry on another instance or in a moment.',
};

/** The code a coded answer of each status carries, named first in its description. */
const CODE_OF_STATUS: Record<number, string> = {
  400: 'INVALID_BODY',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  422: 'IDEMPOTENCY_MISMATCH',
  429: 'RATE_LIMITED',
  500: 'INTERNAL',
  502: 'PROVIDER_UNAVAILABLE',
  503: 'SERVICE_UNAVAILABLE',
};

/** A coded response's description: the status's code first, so a client knows what `code` to expect. */
export function codedDescription(status: number, text: string): string {
  const code = CODE_OF_STATUS[status];
  return code && !text.includes(code) ? `${code}: ${text}` : text;
}

/** Statuses any route can answer, whatever it does. */
const ALWAYS = [500, 503] as const;

/** Response schemas for the error statuses a route can answer, in its family's envelope. */
export function errorResponses(family: Family, statuses: readonly number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const status of [...statuses, ...ALWAYS]) {
    const base = family === 'channel' ? ChannelError : CodedError;
    const text = STATUS_TEXT[status] ?? 'Error.';
    out[status] = Type.Ref(base, { description: family === 'coded' ? codedDescription(status, text) : text });
  }
  return out;
}

interface AjvErrorLike {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

const PART_NAMES: Record<string, string> = {
  body: 'body',
  querystring: 'query parameter',
  params: 'path parameter',
  headers: 'header',
};

/** Turns a schema validation failure into one plain sentence naming the field. */
export function describeValidation(errors: readonly AjvErrorLike[], part: string): { message: string; field?: string } {
  const first = errors[0];
  const partName = PART_NAMES[part] ?? part;
  if (!first) return { message: `Invalid ${partName}.` };
  const path = first.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const where = path ? `'${path}'` : part === 'body' ? 'The body' : `The ${partName}s`;
  switch (first.keyword) {
    case 'required': {
      const missing = String(first.params.missingProperty);
      const field = path ? `${path}.${missing}` : missing;
      return { message: `Invalid ${partName}: '${field}' is required.`, field };
    }
    case 'additionalProperties': {
      const extra = String(first.params.additionalProperty);
      const field = path ? `${path}.${extra}` : extra;
      return { message: `Invalid ${partName}: unknown field '${field}'.`, field };
    }
    case 'type':
      return {
        message: `Invalid ${partName}: ${where} must be ${article(String(first.params.type))}.`,
        ...(path ? { field: path } : {}),
      };
    case 'enum':
    case 'const': {
      const allowed = (first.params.allowedValues as unknown[] | undefined) ?? [first.params.allowedValue];
      return {
        message: `Invalid ${partName}: ${where} must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}.`,
        ...(path ? { field: path } : {}),
      };
    }
    default:
      return {
        message: `Invalid ${partName}: ${where} ${first.message ?? 'is invalid'}.`,
        ...(path ? { field: path } : {}),
      };
  }
}

function article(type: string): string {
  if (type === 'object' || type === 'array' || type === 'integer') return `an ${type}`;
  if (type === 'null') return 'null';
  return `a ${type}`;
}

/** Maps anything thrown inside a request to the AppError the caller sees. */
export function toAppError(err: FastifyError | AppError | Error, bodyLimit: number): AppError {
  if (isAppError(err)) return err;
  const fe = err as FastifyError & { validation?: AjvErrorLike[]; validationContext?: string };
  if (fe.validation) {
    const { message, field } = describeValidation(fe.validation, fe.validationContext ?? 'body');
    return new AppError('INVALID_BODY', message, field ? { details: { field } } : {});
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', `The request body is larger than the limit of ${bodyLimit} bytes.`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('INVALID_BODY', 'The Content-Type must be application/json.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('INVALID_BODY', 'The request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('INVALID_BODY', 'The request body is not valid JSON.');
    default:
      break;
  }
  if (isStorageFailure(err)) {
    storageFailed(err);
    return storageUnavailable();
  }
  if (isDatabaseUnavailable(err)) return databaseUnavailable();
  if (err instanceof SyntaxError || (fe.statusCode === 400 && /json/i.test(fe.message))) {
    return new AppError('INVALID_BODY', 'The request body is not valid JSON.');
  }
  if (fe.statusCode === 400) return new AppError('INVALID_BODY', 'The request is malformed.');
  if (fe.statusCode === 413) {
    return new AppError('PAYLOAD_TOO_LARGE', `The request body is larger than the limit of ${bodyLimit} bytes.`);
  }
  if (fe.statusCode === 415) return new AppError('INVALID_BODY', 'The Content-Type must be application/json.');
  return new AppError('INTERNAL', 'Internal server error.');
}

export function installErrorHandlers(
  app: FastifyInstance,
  bodyLimit: number,
  /**
   * Work to finish before an error is answered, when there is any (a key admitted from the cache
   * is confirmed there, so a key revoked meanwhile gets its 401, not the request's error); what it
   * throws is answered instead. Without it the answer is sent at once, in the same turn, before
   * anything else the connection does (a body that then fails to parse) can answer first.
   */
  beforeAnswer?: (request: FastifyRequest) => Promise<void> | undefined,
): void {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // An unknown route is a 404 whatever else is wrong with the request (its body, say).
    // A route may take larger bodies than the app (the sandbox's files): its own limit is the one to name.
    const limit = request.routeOptions?.bodyLimit ?? bodyLimit;
    const appErr = request.is404 ? notFound(request) : toAppError(err, limit);
    const answer = (e: AppError): void => {
      if (e.code === 'INTERNAL') {
        request.log.error({ err }, 'request failed');
      } else if (e.status >= 500) {
        // The cause the database or file system gave (SQLITE_FULL, 53100, ...), not only the answer's.
        const cause = err instanceof AppError ? undefined : `${(err as { code?: unknown }).code ?? ''} ${err.message}`;
        request.log.warn(
          { code: e.code, reason: e.message, ...(cause ? { cause: cause.trim() } : {}) },
          'upstream failure',
        );
      }
      if (e.headers) reply.headers(e.headers);
      reply.code(e.status).send(envelope(familyOf(request), e));
    };
    const pending = beforeAnswer?.(request);
    if (!pending) {
      answer(appErr);
      return;
    }
    return pending.then(
      () => answer(appErr),
      (authErr: unknown) => answer(toAppError(authErr as FastifyError, limit)),
    );
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(envelope(familyOfUrl(request.url), notFound(request)));
  });
}

function notFound(request: FastifyRequest): AppError {
  const path = request.url.split('?')[0] ?? request.url;
  return new AppError('NOT_FOUND', `No route ${request.method} ${clip(path, 200)}.`);
}

/**
 * Errors Fastify's router raises before any route runs: a path that is not valid percent-encoding,
 * or a path segment longer than any ID. Answered in the envelope of the path's family.
 */
export function frameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const appErr =
    err.code === 'FST_ERR_BAD_URL'
      ? new AppError('INVALID_URL', 'The request path is not valid: it is not correctly percent-encoded.')
      : err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new AppError('NOT_FOUND', 'Not found: a path segment is longer than any ID.')
        : new AppError('INTERNAL', 'Internal server error.');
  if (appErr.code === 'INTERNAL') request.log.error({ err }, 'router failure');
  // No route, so none of the app's hooks run: the headers they would add are set here.
  reply.headers(SECURITY_HEADERS).header('x-request-id', request.id);
  reply.code(appErr.status).send(envelope(familyOfUrl(request.url), appErr));
}

/**
 * A whole HTTP/1.1 answer in the coded envelope, for the edges where no route or reply exists. The
 * answer to a HEAD request has the headers alone (its Content-Length says what a GET would carry):
 * a body there would be read as the start of the next answer.
 */
function rawAnswer(err: AppError, reason: string, headOnly = false): string {
  const body = JSON.stringify(envelope('coded', err));
  const headers = Object.entries({ ...SECURITY_HEADERS, 'x-request-id': randomUUID() })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (
    `HTTP/1.1 ${err.status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n${headers}\r\n${headOnly ? '' : body}`
  );
}

/** Whether the bytes the parser refused begin a HEAD request (when they hold its start). */
function isHeadRequest(rawPacket: unknown): boolean {
  return Buffer.isBuffer(rawPacket) && rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
}

interface SocketInternals {
  /** The response Node is writing on this socket, if any (what Node's own handler looks at). */
  _httpMessage?: ServerResponse | null;
  /** The parser, whose `incoming` is the request being read when the error came. */
  parser?: { incoming?: unknown } | null;
}

/**
 * Requests Node's HTTP parser refuses (not HTTP, headers over the limit, a body not received in
 * time) never reach a route. Each request gets exactly one answer, and the connection is closed:
 * - a response still being made for an earlier request on this connection (a pipelined request
 *   followed by garbage) is the one answer that is written, then the connection closes;
 * - a request already answered whose body then fails to parse gets nothing more;
 * - otherwise the error is answered in the coded envelope, with the security headers and an
 *   X-Request-Id.
 */
export function clientError(
  err: NodeJS.ErrnoException & { bytesParsed?: number; rawPacket?: unknown },
  socket: Duplex,
): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const internals = socket as Duplex & SocketInternals;
  const [appErr, reason] = describeClientError(err);
  const pending = internals._httpMessage;
  if (pending && !pending.writableFinished) {
    if (pending.req && !pending.req.complete) {
      // The request still being read is the one at fault (its body timed out or broke): it gets
      // this answer, unless its route already began another one.
      if (!pending.headersSent) {
        const body = JSON.stringify(envelope(familyOfUrl(pending.req.url ?? ''), appErr));
        pending.writeHead(appErr.status, {
          ...SECURITY_HEADERS,
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
          'x-request-id': randomUUID(),
          connection: 'close',
        });
        pending.end(body, () => socket.destroy());
      } else {
        socket.destroy();
      }
      return;
    }
    // An earlier request's answer is still being made: it is the one answer; then the connection closes.
    if (!pending.headersSent) pending.shouldKeepAlive = false;
    pending.once('finish', () => socket.end());
    pending.once('close', () => socket.destroy());
    return;
  }
  if (internals.parser?.incoming) {
    // The request being read was answered already (its response is done): close, say nothing.
    socket.destroy();
    return;
  }
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(rawAnswer(appErr, reason, isHeadRequest(err.rawPacket)));
}

function describeClientError(err: NodeJS.ErrnoException): [AppError, string] {
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return [
      new AppError('HEADERS_TOO_LARGE', 'The request headers are larger than the server accepts.'),
      'Request Header Fields Too Large',
    ];
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return [new AppError('REQUEST_TIMEOUT', 'The request was not received in time.'), 'Request Timeout'];
  }
  return [new AppError('MALFORMED_REQUEST', 'The request is not valid HTTP.'), 'Bad Request'];
}

/**
 * The two requests Node answers by itself, before any route: an `Expect` other than
 * `100-continue` (Node's bare 417) and `CONNECT` (Node drops the connection without a word).
 * Both are answered in the coded envelope and the connection is closed.
 */
export function installServerEdges(server: Server): void {
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const err = new AppError(
      'EXPECTATION_FAILED',
      `The Expect header '${clip(String(req.headers.expect ?? ''), 40)}' is not supported; only 100-continue is.`,
    );
    const body = JSON.stringify(envelope('coded', err));
    res.writeHead(417, {
      ...SECURITY_HEADERS,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-request-id': randomUUID(),
      connection: 'close',
    });
    res.end(body);
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    const err = new AppError('METHOD_NOT_ALLOWED', 'CONNECT is not supported: this server is not a proxy.');
    socket.on('error', () => socket.destroy());
    socket.end(rawAnswer(err, 'Method Not Allowed'));
  });
}
