/**
 * The kinds of value a setting holds (the `type` of each entry of the list in settings.ts): what
 * counts as unset, how a set value is checked and converted, and the one line a bad value stops
 * start-up with. Those lines are part of the interface: operators and tests read them.
 */
import { isIP } from 'node:net';
import { REGIONS, type Region, type SandboxTemplate, type TrustProxy } from './types.js';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface ValueKind<T> {
  /** A set value that still counts as unset, so the default applies (by default: the empty string). */
  readonly unset?: (raw: string) => boolean;
  /** The value of a set variable; a bad one throws a ConfigError naming `name`. */
  readonly parse: (name: string, raw: string) => T;
}

/** One entry of the list of settings (settings.ts). */
export interface Setting {
  /** The variable, then its other spellings (`PORT` for `PARLEY_PORT`, the per-region form); by default the key alone. */
  readonly names?: readonly string[];
  /** The kind of value: what counts as unset, how a set value is checked and converted. */
  readonly type: ValueKind<unknown>;
  /** The value when unset; `undefined` when there is none or when it is made from other settings (see `shown`). */
  readonly default: unknown;
  /** Markdown for the page's default column when the value alone does not say it. */
  readonly shown?: string;
  /** Words after the default on the page, e.g. `5 days`. */
  readonly note?: string;
  /** The name error messages give, when not the variable's own. */
  readonly label?: string;
  /** Read by something other than `loadConfig`: what reads it. */
  readonly readBy?: string;
  /** Markdown: the page's sentence. */
  readonly doc: string;
}
/** Blank after trimming: unset. */
const blank = (raw: string) => raw.trim() === '';

function positive(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${name} must be a positive integer, got "${raw}"`);
  return n;
}

export const positiveInt: ValueKind<number> = { parse: positive };

export function atLeast(min: number): ValueKind<number> {
  return {
    parse(name, raw) {
      const n = positive(name, raw);
      if (n < min) throw new ConfigError(`${name} must be at least ${min}, got "${raw}"`);
      return n;
    },
  };
}

export function atMost(max: number, inWords: string): ValueKind<number> {
  return {
    parse(name, raw) {
      const n = positive(name, raw);
      if (n > max) throw new ConfigError(`${name} must be at most ${max} (${inWords}), got "${raw}"`);
      return n;
    },
  };
}

/** An integer from `min` to `max`. */
export function between(min: number, max: number): ValueKind<number> {
  return {
    parse(name, raw) {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < min || n > max) {
        throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
      }
      return n;
    },
  };
}

/** A positive integer, or `0` meaning none. */
export const zeroOrPositiveInt: ValueKind<number> = { unset: (raw) => raw === '' || raw === '0', parse: positive };

export const port: ValueKind<number> = {
  parse(name, raw) {
    const n = positive(name, raw);
    if (n > 65535) throw new ConfigError(`${name} must be a port number (1-65535), got "${raw}"`);
    return n;
  },
};

/** `true`/`1` or `false`/`0`, any case; blank is unset. */
export const boolean: ValueKind<boolean> = {
  unset: blank,
  parse(name, raw) {
    const v = raw.trim().toLowerCase();
    if (v === 'false' || v === '0') return false;
    if (v === 'true' || v === '1') return true;
    throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  },
};

/** Comma-separated milliseconds; blank is unset. */
export const milliseconds: ValueKind<readonly number[]> = {
  unset: blank,
  parse(name, raw) {
    const parts = raw.split(',').map((p) => p.trim());
    if (parts.some((p) => !/^\d{1,9}$/.test(p))) {
      throw new ConfigError(`${name} must be a comma-separated list of milliseconds, got "${raw}"`);
    }
    return Object.freeze(parts.map(Number));
  },
};

/** One of a few words, any case. */
export function oneOf<const T extends string>(words: readonly T[]): ValueKind<T> {
  return {
    unset: blank,
    parse(name, raw) {
      const v = raw.trim().toLowerCase();
      if ((words as readonly string[]).includes(v)) return v as T;
      throw new ConfigError(`${name} must be one of ${words.join(', ')}, got "${raw}"`);
    },
  };
}

/** Any text, taken as it is. */
export const text: ValueKind<string> = { parse: (_name, raw) => raw };

/** Any text, the empty string included: only a variable that is not there is unset. */
export const anyText: ValueKind<string> = { unset: () => false, parse: (_name, raw) => raw };

export const url: ValueKind<string> = {
  parse(name, raw) {
    try {
      return new URL(raw).toString().replace(/\/$/, '');
    } catch {
      throw new ConfigError(`${name} must be a URL, got "${raw}"`);
    }
  },
};

/** An http(s) address a page may link to. */
export const webUrl: ValueKind<string> = {
  parse(name, raw) {
    const address = url.parse(name, raw);
    if (!/^https?:\/\//i.test(address)) {
      throw new ConfigError(`${name} must be an http:// or https:// URL, got "${raw}"`);
    }
    return address;
  },
};

/** A PostgreSQL connection URL; the message never repeats the value, which may hold a password. */
export const postgresUrl: ValueKind<string> = {
  parse(name, raw) {
    let address: URL | undefined;
    try {
      address = new URL(raw);
    } catch {
      address = undefined;
    }
    if (!address || !['postgres:', 'postgresql:'].includes(address.protocol) || !address.hostname) {
      throw new ConfigError(`${name} must be a PostgreSQL URL such as postgres://user@127.0.0.1:5432/parley`);
    }
    return raw;
  },
};

export const schemaName: ValueKind<string> = {
  unset: () => false,
  parse(_name, raw) {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(raw)) {
      throw new ConfigError(`PostgreSQL schema name "${raw}" must be lower-case letters, digits and _`);
    }
    return raw;
  },
};

export const region: ValueKind<Region> = {
  unset: () => false,
  parse(_name, raw) {
    const v = raw.trim().toLowerCase();
    if ((REGIONS as readonly string[]).includes(v)) return v as Region;
    throw new ConfigError(`unknown region "${raw}"; expected one of ${REGIONS.join(', ')}`);
  },
};

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export const logLevel: ValueKind<string> = {
  parse(name, raw) {
    const level = raw.trim().toLowerCase();
    if (!LOG_LEVELS.includes(level)) {
      throw new ConfigError(`${name} must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
    }
    return level;
  },
};

/** `v25.0`: the provider's API version. */
export const apiVersion: ValueKind<string> = {
  parse(name, raw) {
    if (!/^v\d+\.\d+$/.test(raw)) throw new ConfigError(`${name} must look like v25.0, got "${raw}"`);
    return raw;
  },
};

/** Names proxy-addr (Fastify's `trustProxy`) accepts besides addresses and CIDRs. */
const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function isAddressOrCidr(entry: string): boolean {
  if (PROXY_NAMES.includes(entry)) return true;
  const [address = '', bits, ...rest] = entry.split('/');
  const family = isIP(address);
  if (!family || rest.length > 0) return false;
  if (bits === undefined) return true;
  const n = Number(bits);
  return /^\d+$/.test(bits) && n <= (family === 4 ? 32 : 128);
}

/** `false`: the socket address is the client; `true`: every proxy; `2`: hops; else addresses/CIDRs. */
export const trustProxy: ValueKind<TrustProxy> = {
  unset: blank,
  parse(name, raw) {
    const value = raw.trim();
    if (value.toLowerCase() === 'false') return false;
    if (value.toLowerCase() === 'true') return true;
    if (/^\d+$/.test(value)) return positive(name, value);
    const entries = value.split(',').map((e) => e.trim());
    const bad = entries.find((e) => !isAddressOrCidr(e));
    if (bad !== undefined) {
      throw new ConfigError(
        `${name} must be true, false, a number of hops, or comma-separated addresses or CIDRs, got "${bad}"`,
      );
    }
    return Object.freeze(entries);
  },
};

/** `[{"name":"shipping","language":"en_US","header":0,"body":1}]`; counts default to 0. */
export const sandboxTemplates: ValueKind<readonly SandboxTemplate[]> = {
  parse(name, raw) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new ConfigError(`${name} must be a JSON array`);
    }
    if (!Array.isArray(parsed)) throw new ConfigError(`${name} must be a JSON array`);
    return Object.freeze(
      parsed.map((item: unknown, i): SandboxTemplate => {
        const t = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
        const count = (v: unknown) => (v === undefined ? 0 : Number.isInteger(v) && Number(v) >= 0 ? Number(v) : -1);
        const header = count(t.header);
        const body = count(t.body);
        if (typeof t.name !== 'string' || typeof t.language !== 'string' || header < 0 || body < 0) {
          throw new ConfigError(`${name}[${i}] needs a name, a language and whole-number counts`);
        }
        return Object.freeze({ name: t.name, language: t.language, header, body });
      }),
    );
  },
};
