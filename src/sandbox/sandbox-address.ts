import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where `parley serve` tells the CLI its in-process sandbox listens (an ephemeral port):
 * `<data>/sandbox-<region>.url`. Only the sandbox's own control endpoint is behind it.
 */
const fileOf = (dataDir: string, region: string) => join(dataDir, `sandbox-${region}.url`);

export function writeSandboxAddress(dataDir: string, region: string, url: string): void {
  writeFileSync(fileOf(dataDir, region), `${url}\n`, { mode: 0o600 });
}

export function readSandboxAddress(dataDir: string, region: string): string | undefined {
  try {
    return readFileSync(fileOf(dataDir, region), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Removes the file if it still names this sandbox (another process may have replaced it). */
export function clearSandboxAddress(dataDir: string, region: string, url: string): void {
  if (readSandboxAddress(dataDir, region) === url) rmSync(fileOf(dataDir, region), { force: true });
}
