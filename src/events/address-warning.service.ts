import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { EventsConfig } from '../config.js';
import { isPrivateAddress } from './address-guard.js';

/** How long a name may take to resolve before the check gives up (and says nothing). */
const LOOKUP_TIMEOUT_MS = 1500;

async function addressesOf(host: string): Promise<string[]> {
  if (isIP(host)) return [host];
  const timeout = new Promise<string[]>((resolve) => setTimeout(() => resolve([]), LOOKUP_TIMEOUT_MS).unref());
  const resolved = lookup(host, { all: true }).then(
    (all) => all.map((a) => a.address),
    // A name that does not resolve now may resolve later: each delivery says so if it still fails.
    () => [],
  );
  return Promise.race([resolved, timeout]);
}

/**
 * A sentence when this server will refuse to deliver to `url` (it points at a private, loopback or
 * link-local address and PARLEY_WEBHOOK_ALLOW_PRIVATE is off), else undefined. Said at once where
 * an endpoint is made (the CLI, the dashboard), so a first hook cannot fail quietly.
 */
export async function endpointAddressWarning(config: EventsConfig, url: string): Promise<string | undefined> {
  if (config.allowPrivate) return undefined;
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return undefined;
  }
  const bad = (await addressesOf(host)).find((a) => isPrivateAddress(a));
  if (bad === undefined) return undefined;
  const where = bad === host ? host : `${host} (${bad})`;
  return (
    `This server will refuse to deliver to ${where}: it is a private, loopback or link-local address. ` +
    'Deliveries to it fail until the server runs with PARLEY_WEBHOOK_ALLOW_PRIVATE=true (for a bot on this machine or network).'
  );
}
