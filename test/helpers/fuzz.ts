/**
 * Pieces of the fuzz suite (test/http/fuzz-openapi.test.ts): a seeded generator, values drawn from
 * an operation's own schemas in the served description, the malformed bodies the probes used, and
 * raw HTTP over a socket for framing that no client library would send.
 */
import { connect } from 'node:net';

/** A small seeded generator (mulberry32), so a failing run can be repeated exactly. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Rand = () => number;
export const pick = <T>(rand: Rand, list: readonly T[]): T => list[Math.floor(rand() * list.length)] as T;

export const STRINGS = [
  '',
  ' ',
  'a',
  'msgapp',
  'template',
  'text',
  'manual',
  'imported',
  'inbound',
  '+14155550100',
  '14155550100',
  'en_US',
  'hello_world',
  'x'.repeat(5000),
  '\u0000',
  '\ud800',
  'é✓😀',
  '<script>',
  "'; drop table end_users; --",
  '__proto__',
  '../../etc/passwd',
  '%00',
  'null',
  '1e309',
];

/** Percent-encodes; a lone surrogate (which encodeURIComponent refuses) becomes its raw UTF-8 bytes, invalid. */
export function enc(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return value
      .split(/([\ud800-\udfff])/)
      .map((part) => (/^[\ud800-\udfff]$/.test(part) ? '%ED%A0%80' : encodeURIComponent(part)))
      .join('');
  }
}

type Schema = Record<string, unknown>;

/** Resolves `#/components/schemas/X` against the served document. */
export function resolver(components: Record<string, Schema>) {
  return (schema: Schema): Schema => {
    let s = schema;
    for (let i = 0; i < 10 && typeof s.$ref === 'string'; i++) {
      s = components[s.$ref.split('/').pop() ?? ''] ?? {};
    }
    return s;
  };
}

/** A wrong value of any kind: what a client gets wrong. */
export function wrongValue(rand: Rand): unknown {
  return pick(rand, [null, true, 0, -1, 1.5, 2 ** 53 + 1, 1e308, '', 'x', [], {}, [1, 'a'], { a: {} }, '\u0000']);
}

/**
 * A value for `schema`: mostly valid (so requests reach the routes' own code), sometimes off by one
 * rule (a wrong type, a value out of range, a field too many or missing).
 */
export function fromSchema(rand: Rand, schema: Schema, resolve: (s: Schema) => Schema, depth = 0): unknown {
  const s = resolve(schema);
  if (rand() < 0.06 || depth > 6) return wrongValue(rand);
  const variants = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (variants?.length) return fromSchema(rand, pick(rand, variants), resolve, depth + 1);
  if (Array.isArray(s.enum)) return pick(rand, s.enum);
  if (s.const !== undefined) return s.const;
  const type = Array.isArray(s.type) ? pick(rand, s.type as string[]) : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const required = new Set((s.required as string[] | undefined) ?? []);
      for (const [name, sub] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) {
        if ((required.has(name) && rand() < 0.95) || rand() < 0.5)
          out[name] = fromSchema(rand, sub, resolve, depth + 1);
      }
      if (rand() < 0.05) out[pick(rand, ['extra', 'constructor', 'id', '_id'])] = wrongValue(rand);
      return out;
    }
    case 'array': {
      const item = (s.items ?? {}) as Schema;
      const n = Math.floor(rand() * 4) + Number(s.minItems ?? 0);
      return Array.from({ length: Math.min(n, 5) }, () => fromSchema(rand, item, resolve, depth + 1));
    }
    case 'integer':
    case 'number': {
      const min = Number(s.minimum ?? 0);
      const max = Number(s.maximum ?? 1000);
      const n = min + Math.floor(rand() * (Math.min(max, min + 1000) - min + 1));
      return rand() < 0.05 ? max + 1 : n;
    }
    case 'boolean':
      return rand() < 0.5;
    case 'string': {
      if (s.format === 'email' || /email/i.test(String(s.description ?? '')))
        return `u${Math.floor(rand() * 1e6)}@example.com`;
      if (/E\.164|phone/i.test(String(s.description ?? '')))
        return `+1415555${String(Math.floor(rand() * 10000)).padStart(4, '0')}`;
      const text = rand() < 0.6 ? `v${Math.floor(rand() * 1e6)}` : pick(rand, STRINGS);
      const max = typeof s.maxLength === 'number' ? s.maxLength : undefined;
      return max !== undefined && rand() < 0.9 ? text.slice(0, max) : text;
    }
    default:
      return pick(rand, STRINGS);
  }
}

const deep = (n: number) => `{"a":${'['.repeat(n)}${']'.repeat(n)}}`;

/** The malformed bodies of the probes: deep nesting, NUL and lone surrogates, huge numbers, duplicate keys... */
export const MALFORMED: readonly (string | Buffer)[] = [
  deep(33),
  deep(5000),
  `{"recipients":${'['.repeat(8000)}`,
  '{"text":"a\\u0000b"}',
  '{"a\\u0000":1}',
  '{"text":"\\ud800"}',
  '{"text":"\\udc00\\ud800"}',
  '{"limit":1e400}',
  '{"to":123456789012345678901234567890123456789}',
  '{"n":-0,"m":1e-400}',
  '{"to":"+14155550100","to":"+14155550101"}',
  '{"__proto__":{"x":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '\ufeff{}',
  '{',
  '[1,',
  '"unterminated',
  '{"a":1}}',
  'not json',
  'null',
  '[]',
  '""',
  '0',
  Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
];

export const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/merge-patch+json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  '',
];

export interface RawAnswer {
  /** Everything the server sent before closing (or before the wait ended). */
  readonly text: string;
  /** The socket was reset (ECONNRESET, EPIPE) rather than answered and closed. */
  readonly reset: boolean;
}

/** Writes raw bytes to the server and collects what comes back until it closes or `waitMs` passes. */
export function rawExchange(port: number, bytes: string | Buffer, waitMs = 3000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let reset = false;
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), reset });
    };
    const timer = setTimeout(done, waitMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') reset = true;
      done();
    });
    socket.on('close', done);
    socket.write(bytes);
  });
}

/** The HTTP answers in `text`, as status and body (chunked bodies left as they are). */
export function parseAnswers(text: string, head = false): { status: number; headers: string; body: string }[] {
  const out: { status: number; headers: string; body: string }[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const headers = rest.slice(0, end);
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(headers)?.[1] ?? 0);
    const body = head ? '' : rest.slice(end + 4, end + 4 + length);
    out.push({ status: Number(headers.slice(9, 12)), headers, body });
    rest = rest.slice(end + 4 + body.length);
  }
  return out;
}
