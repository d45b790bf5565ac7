import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config.js';
import { ensurePrivateDir } from '../shared/private-files.js';

/** AES-256-GCM sealing of secrets at rest: provider access tokens, event endpoints' signing secrets. */
export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

function parseKey(raw: string, where: string): Buffer {
  const text = raw.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new ConfigError(`${where} must hold 32 bytes, base64 or hex`);
  return key;
}

/**
 * A secret from configuration, or else one generated once into the data folder (mode 0600) so
 * that a fresh install works with no configuration and keeps working across restarts.
 */
export function loadOrCreateSecretFile(dataDir: string, fileName: string, make: () => string): string {
  const file = join(dataDir, fileName);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  ensurePrivateDir(dataDir);
  try {
    writeFileSync(file, `${make()}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another process created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  chmodSync(file, 0o600);
  return readFileSync(file, 'utf8').trim();
}

export function secretKeyOf(configured: string | undefined, dataDir: string): Buffer {
  if (configured) return parseKey(configured, 'PARLEY_SECRET_KEY');
  const raw = loadOrCreateSecretFile(dataDir, 'secret.key', () => randomBytes(32).toString('base64'));
  return parseKey(raw, join(dataDir, 'secret.key'));
}

export function webhookAppSecretOf(configured: string | undefined, dataDir: string): string {
  return configured ?? loadOrCreateSecretFile(dataDir, 'webhook-app-secret', () => randomBytes(24).toString('hex'));
}

/** The region's secret box, from PARLEY_SECRET_KEY or the key file of the data folder. */
export function secretBoxOf(config: { messaging: { secretKey: string | undefined }; dataDir: string }): SecretBox {
  return createSecretBox(secretKeyOf(config.messaging.secretKey, config.dataDir));
}

/** GCM's full authentication tag: nothing shorter is accepted. */
const TAG_BYTES = 16;

export function createSecretBox(key: Buffer): SecretBox {
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v1', iv, cipher.getAuthTag(), data]
        .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
        .join('.');
    },
    open(sealed) {
      const [version, iv, tag, data] = sealed.split('.');
      if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('sealed secret has an unknown format');
      const tagBytes = Buffer.from(tag, 'base64url');
      // A truncated tag would be checked on its first bytes only (a forgery then costs 2^32 tries, not 2^128).
      if (tagBytes.length !== TAG_BYTES) throw new Error('sealed secret has a truncated authentication tag');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
      decipher.setAuthTag(tagBytes);
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
