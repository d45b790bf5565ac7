/**
 * Response headers of every answer. Parley serves JSON only, never HTML, so the set is the one
 * recommended for REST APIs (OWASP REST Security cheat sheet) rather than a browser page's: no
 * framing, no sniffing, no referrer, nothing to load, HTTPS remembered where it is used.
 *
 * They are fixed, so they are written from one frozen list in the onSend hook the app already has;
 * a general-purpose middleware recomputed them on every request and cost about a tenth of the
 * throughput of the lightest routes (bench/README.md).
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cross-origin-resource-policy': 'same-origin',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
});

/** The same, but for a page that set its own `content-security-policy`. */
export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(Object.entries(SECURITY_HEADERS).filter(([name]) => name !== 'content-security-policy')),
);
