import { describe, expect, it } from 'vitest';
import { isPrivateAddress } from '../../src/events/address-guard.js';

/** The webhook address guard lets through global unicast addresses only, IPv4 carried in IPv6 included. */
describe('isPrivateAddress', () => {
  const refused = [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '192.0.2.1',
    '198.51.100.7',
    '203.0.113.9',
    '198.18.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    // IPv4 carried in IPv6
    '::ffff:127.0.0.1',
    '::ffff:a9fe:a9fe',
    '::ffff:0:a9fe:a9fe',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b::10.0.0.1',
    '64:ff9b:1::a9fe:a9fe',
    '2002:a9fe:a9fe::1',
    '2002:7f00:1::',
    '::127.0.0.1',
    // Reserved, documentation, tunnels, deprecated
    'fec0::1',
    '100::1',
    '2001:db8::1',
    '3fff::1',
    '2001::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '2001:2::1',
    '5f00::1',
    // Not plain literals
    '127.1',
    '0x7f.0.0.1',
    'fe80::1%eth0',
    'localhost',
    '',
  ];
  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '2606:4700:4700::1111',
    '[2a00:1450:4001:81c::200e]',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:0808:0808::1',
  ];

  it.each(refused)('refuses %s', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });
  it.each(allowed)('allows %s', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});
