import type { CountryCode } from 'libphonenumber-js';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
// The "max" metadata checks number patterns, not only lengths, so isValid() refuses numbers no carrier uses.
import { AsYouType, parsePhoneNumberFromString as parseWithMaxMetadata } from 'libphonenumber-js/max';
import { memoize } from './memo.js';

/**
 * Phone numbers, in one place so that sends, inbound webhooks, the 24-hour window, the sandbox
 * and end-user records all agree.
 *
 *  - What a caller writes (`to` of a send, `from` of the sandbox helper) must be in international
 *    format and valid for libphonenumber's default metadata; it is stored in E.164.
 *  - What the provider reports (`from` / `wa_id`: digits only) is taken as it is: it is the
 *    provider's identity of the user, whatever a validator thinks of it.
 *  - The window is keyed by `windowKey()`, which folds the two spellings the provider uses for one
 *    user (Brazil's ninth digit, Mexico's 521) into one, so a reply to either spelling finds it.
 */

/** Longest text taken as a phone number; E.164 has at most 15 digits, formatting adds a few. */
export const MAX_PHONE_INPUT = 32;

/** Characters of a phone number written by a person: digits and the usual separators. */
const PHONE_TEXT = /^\+[\d\s().-]+$/;

export type PhoneProblem = 'format' | 'extension' | 'invalid';

/**
 * A phone number written in international format, normalized to E.164; or why it is refused.
 * Extensions (`ext. 5`, `x5`, `;ext=5`) are refused rather than silently dropped: a message cannot
 * be sent to an extension.
 */
export const parseInternationalPhone = memoize(parseInternational);

function parseInternational(value: string): { ok: true; e164: string } | { ok: false; problem: PhoneProblem } {
  const text = value.trim();
  if (text.length === 0 || text.length > MAX_PHONE_INPUT || !text.startsWith('+')) {
    return { ok: false, problem: 'format' };
  }
  if (!PHONE_TEXT.test(text)) {
    return { ok: false, problem: /(ext|x|#|;)/i.test(text) ? 'extension' : 'format' };
  }
  const parsed = parsePhoneNumberFromString(text);
  if (parsed?.isValid()) return { ok: true, e164: parsed.number };
  // Mexico's old mobile spelling (+52 1 + ten digits) is still what the provider reports as wa_id
  // for many users; it is valid when the current spelling (+52 + ten digits) is.
  const digits = text.replace(/\D/g, '');
  if (/^521\d{10}$/.test(digits) && parsePhoneNumberFromString(`+52${digits.slice(3)}`)?.isValid()) {
    return { ok: true, e164: `+${digits}` };
  }
  return { ok: false, problem: 'invalid' };
}

/** A phone number in international format, normalized to E.164; undefined when it is not one. */
export function toE164(value: string): string | undefined {
  const parsed = parseInternationalPhone(value);
  return parsed.ok ? parsed.e164 : undefined;
}

/**
 * The E.164 form of a phone number the provider reports in a webhook (digits, no `+`), or
 * undefined when it cannot be one: 7 to 15 digits, not starting with 0 (E.164's bounds).
 */
export function fromProviderDigits(value: unknown): string | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const text = String(value).trim().replace(/^\+/, '');
  return /^[1-9]\d{6,14}$/.test(text) ? `+${text}` : undefined;
}

/**
 * The key of a user's 24-hour window: E.164, with the provider's two spellings of one user folded
 * into one. Brazil: +55, two-digit area code, then a mobile number with its ninth digit (9 + eight
 * digits) or without it (the provider's wa_id of older accounts): keyed without it. Mexico: +52 1
 * + ten digits (old mobile prefix) or +52 + ten digits: keyed without the 1.
 */
export function windowKey(e164: string): string {
  const digits = e164.replace(/^\+/, '');
  if (/^55\d{2}9\d{8}$/.test(digits)) return `+${digits.slice(0, 4)}${digits.slice(5)}`;
  if (/^521\d{10}$/.test(digits)) return `+52${digits.slice(3)}`;
  return `+${digits}`;
}

/**
 * The phone to record an inbound user's end-user record under, validated as strictly as the
 * end-user feature validates phones: the number as the provider reports it, else its other
 * spelling (Brazil with the ninth digit, Mexico without the 1); undefined when neither is valid.
 */
export const endUserPhoneOf = memoize(endUserPhone);

function endUserPhone(e164: string): string | undefined {
  const digits = e164.replace(/^\+/, '');
  const candidates = [e164];
  if (/^55\d{2}[6-9]\d{7}$/.test(digits)) candidates.push(`+${digits.slice(0, 4)}9${digits.slice(4)}`);
  if (/^521\d{10}$/.test(digits)) candidates.push(`+52${digits.slice(3)}`);
  for (const candidate of candidates) {
    const valid = normalizePhone(candidate);
    if (valid) return valid;
  }
  return undefined;
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
  const parsed = parseWithMaxMetadata(text, {
    ...(defaultCountry ? { defaultCountry: defaultCountry as CountryCode } : {}),
    extract: false,
  });
  if (!parsed?.isValid() || parsed.ext) return undefined;
  return parsed.number;
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
