import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, isAppError } from '../shared/errors.js';

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

const CHANNEL_PREFIXES = ['/api/channels', '/api/triggers', '/api/messages', '/api/sandbox'];

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
  502: 'The messaging provider could not be reached or failed.',
};

/** Response schemas for the error statuses a route can answer, in its family's envelope. */
export function errorResponses(family: Family, statuses: readonly number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const status of statuses) {
    const base = family === 'channel' ? ChannelError : CodedError;
    out[status] = Type.Ref(base, { description: STATUS_TEXT[status] ?? 'Error.' });
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

export function installErrorHandlers(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const appErr = toAppError(err, bodyLimit);
    if (appErr.code === 'INTERNAL') {
      request.log.error({ err }, 'request failed');
    } else if (appErr.status >= 500) {
      request.log.warn({ code: appErr.code, reason: appErr.message }, 'upstream failure');
    }
    if (appErr.headers) reply.headers(appErr.headers);
    reply.code(appErr.status).send(envelope(familyOf(request), appErr));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? request.url;
    const err = new AppError('NOT_FOUND', `No route ${request.method} ${path}.`);
    reply.code(404).send(envelope(familyOfUrl(request.url), err));
  });
}
