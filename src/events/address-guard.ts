import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Addresses an event endpoint may reach: global unicast only, so that a tenant cannot make Parley
 * call into the operator's own network (loopback, private, link-local cloud metadata, carrier-grade
 * NAT, unique and site-local, documentation, benchmarking, multicast, reserved). IPv6 forms that
 * carry an IPv4 address (mapped, translated, NAT64's 64:ff9b::/96, 6to4) are judged by that IPv4
 * address; tunnels whose far end cannot be read (Teredo, NAT64's local-use 64:ff9b:1::/48) are
 * refused. The ranges are ipaddr.js's table of special-purpose addresses (the IANA registries).
 */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];
const WELL_KNOWN_NAT64 = ipaddr.parseCIDR('64:ff9b::/96') as [ipaddr.IPv6, number];

/** The IPv4 address an IPv6 address carries, where its form says where it sits. */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const bytes = ip.toByteArray();
  const range = ip.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || ip.match(WELL_KNOWN_NAT64)) {
    return new ipaddr.IPv4(bytes.slice(12, 16));
  }
  if (range === '6to4') return new ipaddr.IPv4(bytes.slice(2, 6));
  return undefined;
}

/** True when `address` (an IP literal) is one an endpoint may not reach: anything but global unicast. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  // Only plain literals: no zone IDs, no shortened or octal IPv4 forms.
  if (isIP(bare) === 0) return true;
  const parsed = ipaddr.parse(bare);
  const ip = parsed.kind() === 'ipv6' ? (embeddedIPv4(parsed as ipaddr.IPv6) ?? parsed) : parsed;
  if (ip.range() !== 'unicast') return true;
  return ip.kind() === 'ipv6' && !(ip as ipaddr.IPv6).match(GLOBAL_UNICAST_V6);
}

/** Where the server refuses an endpoint address: when it is created, or when a delivery connects. */
export interface EndpointAddressProblem {
  readonly refusedAt: 'create' | 'delivery';
  /** A sentence for the person who gave the address. */
  readonly message: string;
}

const MAX_URL = 2048;

/**
 * The one rule for event endpoint addresses, used where an endpoint is created (which refuses the
 * `create` problems) and wherever a warning says the server will refuse an address: a URL, `https://`
 * (`http://` only with PARLEY_WEBHOOK_ALLOW_PRIVATE, for local receivers), no user name or password,
 * at most 2048 characters; and, unless private addresses are allowed, a literal IP address that is
 * not global unicast is refused at each delivery (a name is judged on what it resolves to then).
 */
export function endpointAddressProblem(
  raw: string,
  options: { readonly allowPrivate: boolean },
): EndpointAddressProblem | undefined {
  const refuse = (message: string): EndpointAddressProblem => ({ refusedAt: 'create', message });
  const shown = raw.length > 200 ? `${raw.slice(0, 200)}…` : raw;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse(`'${shown}' is not a URL; give an https:// address.`);
  }
  if (url.protocol === 'http:' && !options.allowPrivate) {
    return refuse(
      'An endpoint URL must be https://: events carry conversations and are signed, so they are not sent in ' +
        'clear (http:// is allowed only with PARLEY_WEBHOOK_ALLOW_PRIVATE=true, for local receivers).',
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return refuse(`An endpoint URL must be http:// or https://, not ${url.protocol.slice(0, 20)}`);
  }
  if (url.username || url.password) return refuse('An endpoint URL must not carry a user name or password.');
  if (raw.length > MAX_URL) return refuse(`An endpoint URL must be at most ${MAX_URL} characters.`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!options.allowPrivate && isIP(host) !== 0 && isPrivateAddress(host)) {
    return {
      refusedAt: 'delivery',
      message: `${host} is a private, loopback or link-local address: deliveries to it will be refused (set PARLEY_WEBHOOK_ALLOW_PRIVATE=true to allow).`,
    };
  }
  return undefined;
}

/** The switch that lets endpoints reach private addresses, as an operator sets it. */
export const ALLOW_PRIVATE_SETTING = 'PARLEY_WEBHOOK_ALLOW_PRIVATE=true';

/**
 * A delivery refused for where it points; its message is the delivery's recorded reason, which
 * `parley endpoint deliveries` and the dashboard show (it starts the same way wherever it is read).
 */
export class PrivateAddressError extends Error {
  constructor(host: string, address: string) {
    super(
      `address refused: private network: ${host === address ? host : `${host} resolves to ${address}`} is a private, loopback or link-local address; the server delivers there only when started with ${ALLOW_PRIVATE_SETTING}`,
    );
    this.name = 'PrivateAddressError';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for sockets that resolves as usual, then refuses private addresses: checked on the
 * address the socket really connects to, so a name that changes between a check and the
 * connection (DNS rebinding) gains nothing.
 */
export function guardedLookup(
  hostname: string,
  options: { all?: boolean; family?: number | string },
  callback: LookupCallback,
): void {
  dnsLookup(hostname, { ...options, all: true } as { all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad) return callback(new PrivateAddressError(hostname, bad.address), []);
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
    callback(null, first.address, first.family);
  });
}
