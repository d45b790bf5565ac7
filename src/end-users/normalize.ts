import type { CountryCode } from 'libphonenumber-js';
// The "max" metadata checks number patterns, not only lengths, so isValid() refuses numbers no carrier uses.
import { AsYouType, parsePhoneNumberFromString } from 'libphonenumber-js/max';

// Deliberately loose: one @, something on each side, a dot in the domain, no spaces. Mailbox
// rules are the mail server's business; this only catches what is clearly not an address.
const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
const MAX_EMAIL = 254;

/** Trimmed and lower-cased (no dot or plus stripping); undefined when it is not an address. */
export function normalizeEmail(value: string): string | undefined {
  const email = value.trim().toLowerCase();
  if (email.length > MAX_EMAIL || !EMAIL.test(email)) return undefined;
  return email;
}

/**
 * E.164 (`+14155552671`), or undefined when the text is not exactly one valid number. A number
 * written without `+` is read in the organization's default country, when it has one. Text around
 * the number (`+447400123456abc`, `call +1...`) and extensions (`ext. 12`, `x12`) are refused, not
 * dropped: an extension cannot be messaged, and silently keeping part of the input would store a
 * number the caller did not write.
 */
export function normalizePhone(value: string, defaultCountry?: string | null): string | undefined {
  const text = value.trim();
  if (!text || text.length > 40) return undefined;
  const parsed = parsePhoneNumberFromString(text, {
    ...(defaultCountry ? { defaultCountry: defaultCountry as CountryCode } : {}),
    extract: false,
  });
  if (!parsed?.isValid() || parsed.ext) return undefined;
  return parsed.number;
}

/**
 * The key a name is searched by: NFKC, then lower-cased by JavaScript, the same on every database
 * (SQLite's lower() folds ASCII only). Stored in end_users.name_search and applied to `q`.
 */
export function searchKey(text: string): string {
  return text.normalize('NFKC').toLowerCase();
}

/**
 * The E.164 prefix of a partly typed national number (`07400` in GB → `+447400`), or undefined
 * when the text is not digits and separators or reads as nothing in that country.
 */
export function nationalPhonePrefix(text: string, country: string): string | undefined {
  if (!/^[\d\s().-]+$/.test(text)) return undefined;
  const typed = new AsYouType(country as CountryCode);
  typed.input(text);
  const value = typed.getNumberValue();
  return value && /^\+\d+$/.test(value) ? value : undefined;
}

/**
 * The smallest string greater than every string that starts with `prefix` (code point order, which
 * is the byte order of UTF-8); undefined when there is none (the prefix is all U+10FFFF).
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = Array.from(prefix);
  while (points.length > 0) {
    const last = points.pop() ?? '';
    const code = last.codePointAt(0) ?? 0;
    if (code < 0x10ffff) {
      // Skip the surrogate range: those code points cannot be stored as UTF-8.
      const next = code === 0xd7ff ? 0xe000 : code + 1;
      return points.join('') + String.fromCodePoint(next);
    }
  }
  return undefined;
}
