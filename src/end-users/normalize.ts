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
 * The key a name is searched by: NFKC, then lower-cased by JavaScript, the same on every database
 * (SQLite's lower() folds ASCII only). Stored in end_users.name_search and applied to `q`.
 */
export function searchKey(text: string): string {
  return text.normalize('NFKC').toLowerCase();
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
