import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Passwords: scrypt (memory-hard) with a random salt. The parameters are stored with each hash
 * (`scrypt$N$r$p$salt$key`), so a hash made at an older cost still verifies and is raised at the
 * next successful sign-in (`needsRehash`). The default cost is N=2^17, r=8: 128 MiB and a few
 * hundred milliseconds per hash (PARLEY_PASSWORD_HASH_COST; tests lower it).
 */
export const DEFAULT_PASSWORD_COST = 17;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, options: { N: number; r: number; p: number }): Promise<Buffer> {
  // scrypt needs 128·N·r bytes; Node refuses past `maxmem` (32 MiB by default), so it is set to twice that.
  const scryptOptions: ScryptOptions = { ...options, maxmem: 256 * options.N * options.r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, scryptOptions, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/** A new hash at cost 2^`cost`. */
export async function hashPassword(password: string, cost = DEFAULT_PASSWORD_COST): Promise<string> {
  const N = 2 ** cost;
  const salt = randomBytes(16);
  const key = await derive(password, salt, { N, r: R, p: P });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** The stored parameters, or undefined for a value that is not one of these hashes. */
function parse(stored: string) {
  const [kind, n, r, p, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || !n || !r || !p || !salt || !hash) return undefined;
  const N = Number(n);
  const params = { N, r: Number(r), p: Number(p) };
  // Bounds on what is stored: a planted N=2^30 must not make one sign-in allocate a terabyte.
  if (!Number.isInteger(N) || N < 2 || N > 2 ** 20 || params.r < 1 || params.r > 32 || params.p !== 1) return undefined;
  return { params, salt: Buffer.from(salt, 'base64'), hash: Buffer.from(hash, 'base64') };
}

/** Constant-time comparison; a malformed stored value never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parse(stored);
  if (!parsed) return false;
  const key = await derive(password, parsed.salt, parsed.params);
  return key.length === parsed.hash.length && timingSafeEqual(key, parsed.hash);
}

/** Whether a stored hash was made at other parameters than the current cost's (then it is remade). */
export function needsRehash(stored: string, cost = DEFAULT_PASSWORD_COST): boolean {
  const parsed = parse(stored);
  return !parsed || parsed.params.N !== 2 ** cost || parsed.params.r !== R || parsed.params.p !== P;
}

/** A hash of a password nobody has: checked when the email is unknown, so both answers take as long. */
const decoys = new Map<number, Promise<string>>();
export function decoyHash(cost = DEFAULT_PASSWORD_COST): Promise<string> {
  let decoy = decoys.get(cost);
  if (!decoy) {
    decoy = hashPassword(randomBytes(16).toString('hex'), cost);
    decoys.set(cost, decoy);
  }
  return decoy;
}

export const MIN_PASSWORD_LENGTH = 10;
