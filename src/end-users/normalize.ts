import type { CountryCode } from 'libphonenumber-js';
// The "max" metadata checks number patterns, not only lengths, so isValid() refuses numbers no carrier uses.
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

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
 * E.164 (`+14155552671`), or undefined when the number is not valid. A number written without
 * `+` is read in the organization's default country, when it has one.
 */
export function normalizePhone(value: string, defaultCountry?: string | null): string | undefined {
  const text = value.trim();
  if (!text || text.length > 40) return undefined;
  const parsed = parsePhoneNumberFromString(
    text,
    defaultCountry ? { defaultCountry: defaultCountry as CountryCode } : undefined,
  );
  if (!parsed?.isValid()) return undefined;
  return parsed.number;
}
