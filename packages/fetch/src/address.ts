// Which addresses web_fetch may connect to. Only public unicast addresses pass on their own: loopback, private,
// link-local (the cloud metadata endpoint 169.254.169.254), carrier-grade NAT, unique-local, multicast and reserved
// ranges are refused unless the person named the host. IPv4-mapped IPv6 (::ffff:10.0.0.1) is judged as the IPv4
// address it carries, so the mapping cannot smuggle a private target through.
import ipaddr from 'ipaddr.js'

/** The range name of an address (`unicast` for a public one), or undefined when it is not an IP address. */
export function rangeOf(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return undefined
  let parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address()
  return parsed.range()
}

export function isPublicAddress(address: string): boolean {
  return rangeOf(address) === 'unicast'
}

/** A hostname as URL parses it, without the brackets of an IPv6 literal. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
}
