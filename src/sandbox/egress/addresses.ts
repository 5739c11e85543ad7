import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/**
 * Which addresses the egress proxy never connects to: everything that is not the public internet (loopback,
 * private, shared, link-local, "this network", multicast and reserved ranges, their IPv6 counterparts) and every
 * address of the runner host itself. Node's BlockList also matches an IPv4 rule against the IPv4-mapped IPv6 form
 * (`::ffff:127.0.0.1`); the mapped, compatible and NAT64 prefixes are blocked whole besides, so no embedded form
 * gets through. The documentation ranges (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32) are not
 * blocked: nothing on the public internet answers there, and some networks put their egress gateway in one.
 */
const V4: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const V6: [string, number][] = [
  ['::', 96], // unspecified, loopback (::1) and the IPv4-compatible forms
  ['::ffff:0:0', 96], // IPv4-mapped
  ['64:ff9b::', 96], // NAT64: reaches IPv4 addresses through a translator
  ['64:ff9b:1::', 48],
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID …)
  ['2002::', 16], // 6to4: embeds an IPv4 address
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

/** One list per family: BlockList matches an IPv4 address against IPv6 rules too (::ffff:0:0/96 is all of IPv4). */
function rangeList(ranges: [string, number][], type: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of ranges) list.addSubnet(net, prefix, type);
  return list;
}

const RANGES = { ipv4: rangeList(V4, 'ipv4'), ipv6: rangeList(V6, 'ipv6') };

/** Every address on the runner's own interfaces (a public one included: the host is not the internet). */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .map((i) => i.address.replace(/%.*$/, ''));
}

export interface AddressCheck {
  /** Why the address is refused, or undefined when it may be connected to. */
  (address: string): string | undefined;
}

/** A checker refusing the blocked ranges and the given host addresses (default: this host's, read now). */
export function addressChecker(own: string[] = hostAddresses()): AddressCheck {
  const mine = new BlockList();
  for (const a of own) {
    const family = isIP(a);
    if (family) mine.addAddress(a, family === 4 ? 'ipv4' : 'ipv6');
  }
  return (address) => {
    const family = isIP(address);
    if (!family) return 'not an IP address';
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (mine.check(address, type)) return 'an address of the runner host';
    if (RANGES[type].check(address, type)) return 'a private, loopback, link-local or reserved address';
    return undefined;
  };
}
