/**
 * The closed list of error codes. Every failure a user can see maps to one of these,
 * and `statusOf` is the single place that turns a code into an HTTP status.
 */
export type ErrorCode =
  | 'INVALID_BODY'
  | 'INVALID_ORIGIN'
  | 'INVALID_URL'
  | 'CREATE_FAILED'
  | 'UPDATE_FAILED'
  | 'DELETE_FAILED'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'DUPLICATE_ENDUSER'
  | 'IDEMPOTENCY_IN_FLIGHT'
  | 'CONFLICT'
  | 'IDEMPOTENCY_MISMATCH'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'PROVIDER_REJECTED'
  | 'PROVIDER_UNAVAILABLE'
  | 'MALFORMED_REQUEST'
  | 'REQUEST_TIMEOUT'
  | 'EXPECTATION_FAILED'
  | 'HEADERS_TOO_LARGE'
  | 'SERVICE_UNAVAILABLE'
  | 'INTERNAL';

export function statusOf(code: ErrorCode): number {
  switch (code) {
    case 'INVALID_BODY':
    case 'INVALID_ORIGIN':
    case 'INVALID_URL':
    case 'CREATE_FAILED':
    case 'UPDATE_FAILED':
    case 'DELETE_FAILED':
    case 'PROVIDER_REJECTED':
    case 'MALFORMED_REQUEST':
      return 400;
    case 'UNAUTHORIZED':
      return 401;
    case 'FORBIDDEN':
      return 403;
    case 'NOT_FOUND':
      return 404;
    case 'METHOD_NOT_ALLOWED':
      return 405;
    case 'DUPLICATE_ENDUSER':
    case 'IDEMPOTENCY_IN_FLIGHT':
    case 'CONFLICT':
      return 409;
    case 'REQUEST_TIMEOUT':
      return 408;
    case 'PAYLOAD_TOO_LARGE':
      return 413;
    case 'EXPECTATION_FAILED':
      return 417;
    case 'IDEMPOTENCY_MISMATCH':
      return 422;
    case 'RATE_LIMITED':
      return 429;
    case 'HEADERS_TOO_LARGE':
      return 431;
    case 'PROVIDER_UNAVAILABLE':
      return 502;
    case 'INTERNAL':
      return 500;
    case 'SERVICE_UNAVAILABLE':
      return 503;
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

/** A failure the caller can see. `message` is a sentence safe to show; `details` is extra body fields. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = options.details;
    this.headers = options.headers;
  }

  get status(): number {
    return statusOf(this.code);
  }
}

export const isAppError = (err: unknown): err is AppError => err instanceof AppError;
