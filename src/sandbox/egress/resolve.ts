import { Resolver } from 'node:dns/promises';

/** Resolves a name to all its addresses (A and AAAA), or throws when it has none. */
export type ResolveHost = (host: string) => Promise<string[]>;

/**
 * The proxy's own resolver: DNS only (no /etc/hosts, so `localhost`-style entries of the runner do not apply), the
 * runner's name servers unless `servers` names others (the tests' stand-in on loopback). The proxy connects to an
 * address this returned and it checked, never looking the name up a second time (DNS rebinding).
 */
export function dnsResolver(servers?: string[], timeoutMs = 5000): ResolveHost {
  const r = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers?.length) r.setServers(servers);
  return async (host) => {
    const [v4, v6] = await Promise.allSettled([r.resolve4(host), r.resolve6(host)]);
    const all = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
    if (!all.length) {
      const why = v4.status === 'rejected' ? (v4.reason as NodeJS.ErrnoException).code : 'no address';
      throw new Error(`cannot resolve ${host}: ${why ?? 'no address'}`);
    }
    return all;
  };
}
