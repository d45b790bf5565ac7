import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDir } from '../shared/private-files.js';

/**
 * Whether the running server lets endpoints reach private addresses (PARLEY_WEBHOOK_ALLOW_PRIVATE),
 * told to the CLI through `<data>/server-<region>.allow-private` (`true` or `false`), written at
 * start-up and removed at shutdown beside the server's address file: `endpoint create` then warns
 * of what that server, not the CLI's own environment, will refuse.
 */
const fileOf = (dataDir: string, region: string) => join(dataDir, `server-${region}.allow-private`);

export function publishPrivateSwitch(dataDir: string, region: string, allowPrivate: boolean): void {
  ensurePrivateDir(dataDir);
  writeFileSync(fileOf(dataDir, region), `${allowPrivate}\n`, { mode: 0o600 });
}

/** The running server's switch, or undefined when no server of the region has said. */
export function publishedPrivateSwitch(dataDir: string, region: string): boolean | undefined {
  try {
    const value = readFileSync(fileOf(dataDir, region), 'utf8').trim();
    return value === 'true' ? true : value === 'false' ? false : undefined;
  } catch {
    return undefined;
  }
}

export function clearPrivateSwitch(dataDir: string, region: string): void {
  rmSync(fileOf(dataDir, region), { force: true });
}

/**
 * What a command judges endpoint addresses by: the running server's switch when one has said it,
 * else what this environment would start with.
 */
export const allowPrivateForCommands = (
  config: { readonly dataDir: string; readonly events: { readonly allowPrivate: boolean } },
  region: string,
): boolean => publishedPrivateSwitch(config.dataDir, region) ?? config.events.allowPrivate;
