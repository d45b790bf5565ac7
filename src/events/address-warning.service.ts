import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { ALLOW_PRIVATE_SETTING, isPrivateAddress } from './address-guard.js';

/** How long a name may take to resolve before the check gives up (and warns of nothing). */
const LOOKUP_TIMEOUT_MS = 2000;

async function addressesOf(host: string): Promise<string[]> {
  if (isIP(host) !== 0) return [host];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string[]>((resolve) => {
    timer = setTimeout(() => resolve([]), LOOKUP_TIMEOUT_MS);
  });
  try {
    const resolved = lookup(host, { all: true })
      .then((found) => found.map((a) => a.address))
      .catch(() => []);
    return await Promise.race([resolved, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The one check of an endpoint's address made when the endpoint is created (the CLI's
 * `endpoint create`, the dashboard's hook form), so that a hook the server will refuse is said at
 * once rather than found in its failed deliveries: a sentence saying what to do, or undefined when
 * the server will deliver there. `allowPrivate` is the server's PARLEY_WEBHOOK_ALLOW_PRIVATE.
 * The delivery itself checks again on the address it really connects to (address-guard.ts); a name
 * that cannot be resolved now gets no warning (it may resolve where the server runs).
 */
export async function endpointAddressWarning(
  url: string,
  options: { allowPrivate: boolean },
): Promise<string | undefined> {
  if (options.allowPrivate) return undefined;
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return undefined;
  }
  const refused = (await addressesOf(host)).find((a) => isPrivateAddress(a));
  if (refused === undefined) return undefined;
  const where = refused === host ? host : `${host} (${refused})`;
  return (
    `The server will refuse to deliver events to ${where}: it is a private, loopback or link-local address. ` +
    `For a bot on this machine or your own network, restart the server with ${ALLOW_PRIVATE_SETTING} ` +
    `(e.g. \`${ALLOW_PRIVATE_SETTING} npm start\`); until then every delivery to it fails with "address refused".`
  );
}
