import { clearAddress, readAddress, writeAddress } from '../shared/address-file.js';

/**
 * Where `parley serve` tells the CLI its in-process sandbox listens (an ephemeral port):
 * `<data>/sandbox-<region>.url`. Only the sandbox's own control endpoint is behind it.
 */
export const writeSandboxAddress = (dataDir: string, region: string, url: string): void =>
  writeAddress(dataDir, 'sandbox', region, url);

export const readSandboxAddress = (dataDir: string, region: string): string | undefined =>
  readAddress(dataDir, 'sandbox', region);

export const clearSandboxAddress = (dataDir: string, region: string, url: string): void =>
  clearAddress(dataDir, 'sandbox', region, url);
