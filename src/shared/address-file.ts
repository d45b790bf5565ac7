import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDir } from './private-files.js';

/**
 * Small files in the data folder through which a running `parley serve` tells the CLI where it
 * listens: `<data>/<name>-<region>.url`, written at start-up and removed at shutdown.
 */
const fileOf = (dataDir: string, name: string, region: string) => join(dataDir, `${name}-${region}.url`);

export function writeAddress(dataDir: string, name: string, region: string, url: string): void {
  ensurePrivateDir(dataDir);
  writeFileSync(fileOf(dataDir, name, region), `${url}\n`, { mode: 0o600 });
}

export function readAddress(dataDir: string, name: string, region: string): string | undefined {
  try {
    return readFileSync(fileOf(dataDir, name, region), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Removes the file if it still names this address (another process may have replaced it). */
export function clearAddress(dataDir: string, name: string, region: string, url: string): void {
  if (readAddress(dataDir, name, region) === url) rmSync(fileOf(dataDir, name, region), { force: true });
}
