import type { FastifyInstance, FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { clip } from '../shared/clip.js';
import { AppError } from '../shared/errors.js';

/**
 * How deep a JSON body may nest (objects and arrays, the outermost counting 1), one rule for the
 * whole API (docs/security.md). Checked on the text before parsing, so that nothing downstream (a
 * body hash, a context stored as JSON, a validator) ever recurses over a deeper client value.
 */
export const MAX_BODY_DEPTH = 32;

/** Methods whose requests carry no body: an empty one sent with a JSON Content-Type is no body. */
const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/**
 * Parses a JSON request body, or throws the 400 the caller sees. Besides what JSON.parse refuses,
 * it refuses `__proto__` and `constructor.prototype` keys (prototype poisoning) and strings holding
 * the NUL character, which PostgreSQL cannot store in text: refusing them here keeps both databases
 * answering alike.
 */
export function parseJsonBody(method: string, text: string): unknown {
  if (text.length === 0) {
    if (BODYLESS.has(method)) return undefined;
    throw new AppError('INVALID_BODY', 'The request body is empty; send a JSON object.');
  }
  // A text shorter than twice the limit cannot open that many brackets: most bodies skip the scan.
  if (text.length > 2 * MAX_BODY_DEPTH && depthExceeds(text, MAX_BODY_DEPTH)) {
    throw new AppError(
      'INVALID_BODY',
      `The request body nests deeper than ${MAX_BODY_DEPTH} levels of objects and arrays; flatten it.`,
    );
  }
  let value: unknown;
  try {
    value = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    if (err instanceof SyntaxError && err.message.includes('forbidden prototype')) {
      throw new AppError(
        'INVALID_BODY',
        "The request body must not use the keys '__proto__' or 'constructor.prototype'.",
      );
    }
    throw new AppError('INVALID_BODY', 'The request body is not valid JSON.');
  }
  // The escape is the only way JSON text can carry a NUL; "\\u0000" (an escaped backslash) is a
  // false alarm, so the value itself is searched before refusing.
  if (text.includes('\\u0000')) {
    const found = nulPath(value, '');
    if (found !== undefined) {
      // A path hundreds of thousands of levels deep is named by its start.
      const path = clip(found, 200);
      throw new AppError(
        'INVALID_BODY',
        `Invalid body: ${path ? `'${path}'` : 'the body'} must not contain the NUL character (\\u0000).`,
        path ? { details: { field: path } } : {},
      );
    }
  }
  return value;
}

/**
 * Whether JSON text opens more than `limit` objects or arrays inside one another, counting only
 * brackets outside strings. One pass, no recursion; text that is not JSON is left to the parser.
 */
export function depthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * The dotted path of the first string (value or key) holding a NUL, or undefined. Iterative, with
 * its own stack, and paths made only for the value found: a body nested hundreds of thousands of
 * levels deep must neither overflow the call stack nor build a path string per level.
 */
function nulPath(root: unknown, rootPath: string): string | undefined {
  // Each visited value remembers its parent's index and its key; the path is spelled out at the end.
  const keys: string[] = [rootPath];
  const parents: number[] = [-1];
  const pathOf = (index: number): string => {
    const parts: string[] = [];
    for (let i = index; i >= 0; i = parents[i] ?? -1) parts.push(keys[i] ?? '');
    return parts.reverse().filter(Boolean).join('.');
  };
  const stack: [unknown, number][] = [[root, 0]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [value, index] = next;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return pathOf(index);
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    const entries = Object.entries(value);
    // Pushed in reverse, so the first field is looked at first (the path names the first NUL).
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, inner] = entries[i] as [string, unknown];
      keys.push(key);
      parents.push(index);
      if (key.includes('\u0000')) return pathOf(keys.length - 1);
      stack.push([inner, keys.length - 1]);
    }
  }
  return undefined;
}

/** The app's one JSON body parser (replacing Fastify's). Route plugins with other JSON media types reuse it. */
export function installJsonParser(app: FastifyInstance, contentType: string | RegExp = 'application/json'): void {
  if (app.hasContentTypeParser(contentType)) app.removeContentTypeParser(contentType);
  app.addContentTypeParser(contentType, { parseAs: 'string' }, (request: FastifyRequest, body, done) => {
    try {
      done(null, parseJsonBody(request.method, body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

/**
 * Path parameters and query values holding a NUL (`%00`): no record can have such an ID (404),
 * and a query value with one is a 400 naming the parameter. Checked only when the raw URL holds
 * `%00`, so other requests pay one substring search.
 */
export function checkUrlForNul(request: FastifyRequest): AppError | undefined {
  const url = request.raw.url ?? '';
  if (!url.includes('%00')) return undefined;
  const params = (request.params ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(params)) {
    if (typeof value === 'string' && value.includes('\u0000')) {
      return new AppError('NOT_FOUND', `Not found: the path parameter '${name}' contains the NUL character.`);
    }
  }
  const query = (request.query ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(query)) {
    const values = Array.isArray(value) ? value : [value];
    if (values.some((v) => typeof v === 'string' && v.includes('\u0000'))) {
      return new AppError(
        'INVALID_BODY',
        `Invalid query parameter: '${name}' must not contain the NUL character (%00).`,
        { details: { field: name } },
      );
    }
  }
  return undefined;
}
