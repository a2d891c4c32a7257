/**
 * Address classification for the SSRF guard: which IP addresses a gateway may connect to on behalf of a
 * description URL, an upstream server URL or a token endpoint. Pure functions over address text, so the
 * rules are testable without sockets.
 *
 * The ranges come from the IANA special-purpose address registries (RFC 6890 and its updates): anything
 * that is not globally routable is refused unless the operator lists it in `network.allowPrivateNetworks`.
 * MCP 2026-07-28 Security Best Practices › SSRF asks for loopback, private and link-local ranges
 * (including 169.254.0.0/16, fc00::/7, fe80::/10) to be blocked.
 */
import { isIP } from 'node:net';
import { GatewayError } from '@gateway/core';

/** Why an address is not public; `public` addresses need no allowlist entry. */
export type AddressCategory =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cloud-metadata'
  | 'shared (CGNAT)'
  | 'multicast'
  | 'reserved';

interface ParsedAddress {
  family: 4 | 6;
  /** The address as an unsigned integer (32 or 128 bits). */
  value: bigint;
}

interface Cidr extends ParsedAddress {
  prefix: number;
}

/** A CIDR list parsed once; what `isAddressAllowed` accepts besides raw strings. */
export interface AllowList {
  readonly entries: readonly Cidr[];
}

function parseIpv4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    // Dotted-decimal only: refuse octal (`010`) and hex forms some resolvers accept, so text is unambiguous.
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = (value << 8n) | BigInt(octet);
  }
  return value;
}

function parseIpv6(text: string): bigint | undefined {
  let address = text;
  const zone = address.indexOf('%');
  if (zone !== -1) address = address.slice(0, zone); // fe80::1%eth0: the zone does not change the range
  if (isIP(address) !== 6) return undefined;
  // An embedded dotted IPv4 tail (::ffff:1.2.3.4) becomes two hex groups.
  const lastColon = address.lastIndexOf(':');
  const tail = address.slice(lastColon + 1);
  if (tail.includes('.')) {
    const ipv4 = parseIpv4(tail);
    if (ipv4 === undefined) return undefined;
    address = `${address.slice(0, lastColon + 1)}${(ipv4 >> 16n).toString(16)}:${(ipv4 & 0xffffn).toString(16)}`;
  }
  const halves = address.split('::');
  const head = halves[0] ? halves[0].split(':') : [];
  const rest = halves.length > 1 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - rest.length;
  const groups = halves.length > 1 ? [...head, ...Array<string>(missing).fill('0'), ...rest] : head;
  if (groups.length !== 8) return undefined;
  let value = 0n;
  for (const group of groups) value = (value << 16n) | BigInt(Number.parseInt(group, 16));
  return value;
}

/** Parses an IPv4 or IPv6 address (brackets and zone ids tolerated); undefined when it is not one. */
export function parseAddress(text: string): ParsedAddress | undefined {
  const address = text.replace(/^\[|\]$/g, '');
  const ipv4 = parseIpv4(address);
  if (ipv4 !== undefined) return { family: 4, value: ipv4 };
  const ipv6 = parseIpv6(address);
  if (ipv6 !== undefined) return { family: 6, value: ipv6 };
  return undefined;
}

/**
 * Parses `a.b.c.d/n` or `x::y/n` (a bare address means a single host). Throws NETWORK_ALLOWLIST_INVALID
 * naming `setting`, the list the entry came from.
 */
export function parseCidr(text: string, setting = 'network.allowPrivateNetworks'): Cidr {
  const [addressText, prefixText, ...extra] = text.trim().split('/');
  const address = addressText === undefined ? undefined : parseAddress(addressText);
  const width = address?.family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? width : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN;
  if (!address || extra.length > 0 || !(prefix >= 0 && prefix <= width)) {
    throw new GatewayError('NETWORK_ALLOWLIST_INVALID', `${setting}: '${text}' is not a CIDR range such as 127.0.0.1/32 or fd00::/8`);
  }
  return { ...address, prefix };
}

/** Parses a list of ranges (`network.allowPrivateNetworks`, `gateway.trustedProxies`) once. */
export function compileAllowList(list: readonly string[] | AllowList | undefined, setting?: string): AllowList {
  if (list === undefined) return { entries: [] };
  if (!Array.isArray(list)) return list as AllowList;
  return { entries: (list as readonly string[]).map((entry) => parseCidr(entry, setting)) };
}

function inRange(address: ParsedAddress, range: Cidr): boolean {
  if (address.family !== range.family) return false;
  const width = BigInt(address.family === 4 ? 32 : 128);
  const shift = width - BigInt(range.prefix);
  return address.value >> shift === range.value >> shift;
}

function range(text: string, category: AddressCategory): [Cidr, AddressCategory] {
  return [parseCidr(text), category];
}

// Most specific first: the first match names the category.
const SPECIAL_IPV4: ReadonlyArray<[Cidr, AddressCategory]> = [
  range('169.254.169.254/32', 'cloud-metadata'), // AWS, GCP, Azure, OpenStack instance metadata
  range('0.0.0.0/8', 'unspecified'), // RFC 1122 "this network"; 0.0.0.0 reaches the local host on Linux
  range('10.0.0.0/8', 'private'), // RFC 1918
  range('100.64.0.0/10', 'shared (CGNAT)'), // RFC 6598
  range('127.0.0.0/8', 'loopback'), // RFC 1122
  range('169.254.0.0/16', 'link-local'), // RFC 3927
  range('172.16.0.0/12', 'private'), // RFC 1918
  range('192.0.0.0/24', 'reserved'), // RFC 6890 IETF protocol assignments
  range('192.0.2.0/24', 'reserved'), // RFC 5737 documentation
  range('192.88.99.0/24', 'reserved'), // RFC 7526 deprecated 6to4 relay anycast
  range('192.168.0.0/16', 'private'), // RFC 1918
  range('198.18.0.0/15', 'reserved'), // RFC 2544 benchmarking
  range('198.51.100.0/24', 'reserved'), // RFC 5737 documentation
  range('203.0.113.0/24', 'reserved'), // RFC 5737 documentation
  range('224.0.0.0/4', 'multicast'), // RFC 5771
  range('240.0.0.0/4', 'reserved'), // RFC 1112 future use, includes 255.255.255.255 broadcast
];

const SPECIAL_IPV6: ReadonlyArray<[Cidr, AddressCategory]> = [
  range('fd00:ec2::254/128', 'cloud-metadata'), // AWS instance metadata over IPv6
  range('::/128', 'unspecified'), // RFC 4291
  range('::1/128', 'loopback'), // RFC 4291
  range('64:ff9b:1::/48', 'private'), // RFC 8215 local-use NAT64
  range('100::/64', 'reserved'), // RFC 6666 discard-only
  range('2001::/32', 'reserved'), // RFC 4380 Teredo: the tunnelled IPv4 address cannot be checked
  range('2001:db8::/32', 'reserved'), // RFC 3849 documentation
  range('fc00::/7', 'private'), // RFC 4193 unique local
  range('fe80::/10', 'link-local'), // RFC 4291
  range('fec0::/10', 'private'), // RFC 3879 deprecated site-local
  range('ff00::/8', 'multicast'), // RFC 4291
  range('::/96', 'reserved'), // RFC 4291 deprecated IPv4-compatible addresses
];

/** IPv6 forms that carry an IPv4 address the packet really reaches: the IPv4 rules apply to it. */
function embeddedIpv4(address: ParsedAddress): ParsedAddress | undefined {
  if (address.family !== 6) return undefined;
  const value = address.value;
  if (value >> 32n === 0xffffn) return { family: 4, value: value & 0xffffffffn }; // ::ffff:0:0/96 IPv4-mapped
  if (value >> 32n === 0x64ff9b0000000000000000n) return { family: 4, value: value & 0xffffffffn }; // 64:ff9b::/96 NAT64
  if (value >> 112n === 0x2002n) return { family: 4, value: (value >> 80n) & 0xffffffffn }; // 2002::/16 6to4
  return undefined;
}

/**
 * The key a per-address limit counts a client under: an IPv4 address as itself (also in the IPv4-mapped form
 * a dual-stack socket reports), an IPv6 address by its /64. A host or site is normally given a whole /64, so
 * counting each IPv6 address apart would let one client take 2^64 turns. Text that is not an address is its
 * own key.
 */
export function addressBucket(text: string): string {
  const address = parseAddress(text);
  if (!address) return text;
  const ipv4 = address.family === 4 ? address.value : address.value >> 32n === 0xffffn ? address.value & 0xffffffffn : undefined;
  if (ipv4 !== undefined) return [24n, 16n, 8n, 0n].map((shift) => String((ipv4 >> shift) & 0xffn)).join('.');
  const groups = [112n, 96n, 80n, 64n].map((shift) => ((address.value >> shift) & 0xffffn).toString(16));
  return `${groups.join(':')}::/64`;
}

/** The category of an address; throws NETWORK_ADDRESS_INVALID for text that is not an IP address. */
export function classifyAddress(text: string): AddressCategory {
  const address = parseAddress(text);
  if (!address) {
    throw new GatewayError('NETWORK_ADDRESS_INVALID', `'${text}' is not an IP address`);
  }
  return classifyParsed(address);
}

function classifyParsed(address: ParsedAddress): AddressCategory {
  const embedded = embeddedIpv4(address);
  if (embedded) return classifyParsed(embedded);
  const table = address.family === 4 ? SPECIAL_IPV4 : SPECIAL_IPV6;
  for (const [cidr, category] of table) if (inRange(address, cidr)) return category;
  return 'public';
}

/**
 * May the gateway connect to this address? Public addresses: yes. Loopback, private, link-local, CGNAT,
 * cloud-metadata, unspecified, multicast and reserved addresses (also inside IPv4-mapped, NAT64 or 6to4
 * IPv6 forms): only when an allowlist range contains the address or the IPv4 address it carries.
 * Text that is not an IP address is never allowed.
 */
export function isAddressAllowed(address: string, allowList: readonly string[] | AllowList = []): boolean {
  const parsed = parseAddress(address);
  if (!parsed) return false;
  if (classifyParsed(parsed) === 'public') return true;
  return isParsedInRanges(parsed, compileAllowList(allowList));
}

/**
 * Is this address inside one of the ranges (also as the IPv4 address an IPv4-mapped, NAT64 or 6to4 form
 * carries, as a dual-stack socket reports an IPv4 peer)? Text that is not an IP address never is.
 */
export function isAddressInRanges(address: string, ranges: AllowList): boolean {
  const parsed = parseAddress(address);
  return parsed !== undefined && isParsedInRanges(parsed, ranges);
}

function isParsedInRanges(parsed: ParsedAddress, { entries }: AllowList): boolean {
  const embedded = embeddedIpv4(parsed);
  return entries.some((entry) => inRange(parsed, entry) || (embedded !== undefined && inRange(embedded, entry)));
}
