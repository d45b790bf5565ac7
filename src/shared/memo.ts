/**
 * A pure function of one string, remembered for the last inputs seen (at most `max`; past that the
 * memory starts over). For parsers on hot paths that see the same few inputs again and again, the
 * phone numbers of a send, say.
 */
export function memoize<R>(fn: (input: string) => R, max = 10_000): (input: string) => R {
  let seen = new Map<string, R>();
  return (input) => {
    const hit = seen.get(input);
    if (hit !== undefined || seen.has(input)) return hit as R;
    const result = fn(input);
    if (seen.size >= max) seen = new Map();
    seen.set(input, result);
    return result;
  };
}
