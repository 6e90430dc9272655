/**
 * Which network addresses a webhook endpoint may reach only when it was added with
 * `--allow-private`: this network, private, shared (carrier-grade NAT), loopback and
 * link-local ranges, in IPv4 and IPv6, the IPv4 ones also in their IPv6 forms (mapped,
 * compatible, NAT64), which a host name could otherwise resolve to unnoticed. Pure: the worker
 * (src/pipeline/services/webhook-delivery.ts) checks every address a host name resolves to before connecting.
 */

/** `[first address, prefix length, what it is]` */
type Range = readonly [string, number, string];

export const PRIVATE_IPV4_RANGES: readonly Range[] = [
  ['0.0.0.0', 8, 'this network'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared address space'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.168.0.0', 16, 'private'],
];

export const PRIVATE_IPV6_RANGES: readonly Range[] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fc00::', 7, 'unique local'],
  ['fe80::', 10, 'link-local'],
];

/** IPv6 prefixes whose last 32 bits are an IPv4 address, checked as that address. */
const IPV4_IN_IPV6: readonly Range[] = [
  ['::ffff:0:0', 96, 'IPv4-mapped'],
  ['::', 96, 'IPv4-compatible'],
  ['64:ff9b::', 96, 'NAT64'],
];

/** 4 bytes of a dotted-quad IPv4 address; undefined when it is not one. */
function ipv4Bytes(s: string): number[] | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : NaN));
  return bytes.every((b) => b >= 0 && b <= 255) ? bytes : undefined;
}

/** 16 bytes of an IPv6 address (`::` shorthand, a dotted-quad tail, a `%zone` dropped); undefined when it is not one. */
function ipv6Bytes(input: string): number[] | undefined {
  const s = input.replace(/%.*$/, '').toLowerCase();
  if (!/^[0-9a-f:.]+$/.test(s)) return undefined;
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string): number[] | undefined => {
    if (h === '') return [];
    const out: number[] = [];
    const parts = h.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]!;
      if (i === parts.length - 1 && p.includes('.')) {
        const v4 = ipv4Bytes(p);
        if (!v4) return undefined;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (/^[0-9a-f]{1,4}$/.test(p)) {
        out.push(parseInt(p, 16));
      } else {
        return undefined;
      }
    }
    return out;
  };
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const words = [...head, ...Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

function inRange(bytes: number[], first: number[], prefix: number): boolean {
  for (let bit = 0; bit < prefix; bit++) {
    const i = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if ((bytes[i]! & mask) !== (first[i]! & mask)) return false;
  }
  return true;
}

function matchV4(bytes: number[]): string | undefined {
  for (const [first, prefix, what] of PRIVATE_IPV4_RANGES) {
    if (inRange(bytes, ipv4Bytes(first)!, prefix)) return `${first}/${prefix}, ${what}`;
  }
  return undefined;
}

/**
 * The private range an IP address (IPv4 dotted quad or IPv6, brackets allowed) falls in, as
 * `10.0.0.0/8, private`; undefined for a public address or a string that is no IP address.
 */
export function privateAddressRange(address: string): string | undefined {
  const a = address.replace(/^\[(.*)\]$/, '$1');
  const v4 = ipv4Bytes(a);
  if (v4) return matchV4(v4);
  const v6 = ipv6Bytes(a);
  if (!v6) return undefined;
  for (const [first, prefix, what] of PRIVATE_IPV6_RANGES) {
    if (inRange(v6, ipv6Bytes(first)!, prefix)) return `${first}/${prefix}, ${what}`;
  }
  for (const [first, prefix, what] of IPV4_IN_IPV6) {
    if (inRange(v6, ipv6Bytes(first)!, prefix)) {
      const inner = matchV4(v6.slice(12));
      if (inner) return `${inner} (${what})`;
    }
  }
  return undefined;
}

/** Whether a URL's host is an IP address literal (then no lookup happens before connecting). */
export function isIpLiteral(hostname: string): boolean {
  const h = hostname.replace(/^\[(.*)\]$/, '$1');
  return ipv4Bytes(h) !== undefined || ipv6Bytes(h) !== undefined;
}

/**
 * What a URL's host names literally, when that is private: an IP address in a private range, or
 * `localhost` (and its subdomains, which resolvers answer with loopback). Undefined for a host
 * name, whose addresses are checked when it is resolved, at delivery.
 */
export function privateHostLiteral(hostname: string): string | undefined {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return 'localhost, loopback';
  return privateAddressRange(h);
}
