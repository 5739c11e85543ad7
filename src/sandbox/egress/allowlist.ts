/**
 * The egress allowlist: which hosts (and ports, and for plain HTTP path prefixes) a setup command with network may
 * reach through the egress proxy. Pure: no I/O.
 */

/** The package registries and their file hosts for the common ecosystems: what `setup.network: true` reaches. */
export const REGISTRY_HOSTS: readonly string[] = [
  // Python
  'pypi.org',
  'files.pythonhosted.org',
  // JavaScript
  'registry.npmjs.org',
  'registry.yarnpkg.com',
  // Rust
  'crates.io',
  'static.crates.io',
  'index.crates.io',
  // Go
  'proxy.golang.org',
  'sum.golang.org',
  // Ruby
  'rubygems.org',
  'index.rubygems.org',
  // JVM
  'repo.maven.apache.org',
  'repo1.maven.org',
  'plugins.gradle.org',
  'services.gradle.org',
  // PHP, .NET, Elixir
  'repo.packagist.org',
  'api.nuget.org',
  'repo.hex.pm',
  // Debian and Ubuntu archives
  'deb.debian.org',
  'security.debian.org',
  'archive.ubuntu.com',
  'security.ubuntu.com',
];

export interface AllowEntry {
  /** Lower-case host name without a trailing dot; with `wildcard`, the suffix its subdomains end in. */
  host: string;
  /** `*.host`: any subdomain of host (not host itself). */
  wildcard: boolean;
  /** The one port the entry admits; without it, 80 and 443 (or the scheme's port). */
  port?: number;
  scheme?: 'http' | 'https';
  /**
   * Plain HTTP requests must have a path starting with it. A CONNECT tunnel (HTTPS) hides its path from the proxy,
   * which does not terminate TLS: for CONNECT a path-prefix entry admits the whole host (docs/security.md).
   */
  pathPrefix?: string;
}

export interface EgressPolicy {
  /** `registries`: only `allow`; `all`: any public host (never a blocked address). */
  mode: 'registries' | 'all';
  allow: AllowEntry[];
}

const NAME = /^(\*\.)?([a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/** A host name as the proxy compares it: lower case, one trailing dot dropped. */
export function normalizeHost(host: string): string {
  const h = host.toLowerCase();
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/**
 * Parses one allow entry: `host`, `*.host`, `host:port`, `https://host[:port]/path-prefix`. Throws with the entry in
 * the message when it is none of these (IP addresses are not entries: the allowlist names hosts).
 */
export function parseAllowEntry(raw: string): AllowEntry {
  const text = raw.trim();
  const bad = () => new Error(`not a host, *.host, host:port or http(s)://host/path entry: ${JSON.stringify(raw)}`);
  const scheme = /^(https?):\/\//i.exec(text)?.[1]?.toLowerCase() as 'http' | 'https' | undefined;
  const rest = scheme ? text.slice(scheme.length + 3) : text;
  const m = /^([^/:@]+)(?::(\d{1,5}))?(\/.*)?$/.exec(rest);
  if (!m || (m[3] && !scheme)) throw bad();
  const host = normalizeHost(m[1]!);
  if (!NAME.test(host) || /^[\d.]+$/.test(host.replace(/^\*\./, ''))) throw bad();
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && (port < 1 || port > 65535)) throw bad();
  const wildcard = host.startsWith('*.');
  const entry: AllowEntry = { host: wildcard ? host.slice(2) : host, wildcard };
  if (port !== undefined) entry.port = port;
  if (scheme) entry.scheme = scheme;
  if (m[3] && m[3] !== '/') entry.pathPrefix = m[3];
  return entry;
}

export function registriesAllow(): AllowEntry[] {
  return REGISTRY_HOSTS.map((h) => parseAllowEntry(h));
}

function portAdmitted(e: AllowEntry | undefined, port: number): boolean {
  if (e?.port !== undefined) return e.port === port;
  if (e?.scheme === 'http') return port === 80;
  if (e?.scheme === 'https') return port === 443;
  return port === 80 || port === 443;
}

function hostMatches(e: AllowEntry, host: string): boolean {
  return e.wildcard ? host.endsWith(`.${e.host}`) : host === e.host;
}

export interface EgressRequest {
  /** Normalized host: a name or an IP address. */
  host: string;
  port: number;
  /** The path of a plain HTTP request; undefined for CONNECT. */
  path?: string;
}

export type Refusal = 'not on the allowlist' | 'port not allowed';

/** Whether the policy admits the request by name and port (addresses are checked after resolving, separately). */
export function admits(policy: EgressPolicy, r: EgressRequest): Refusal | undefined {
  const entries = policy.allow.filter((e) => hostMatches(e, r.host));
  const pathOk = (e: AllowEntry) => r.path === undefined || !e.pathPrefix || r.path.startsWith(e.pathPrefix);
  const byName = entries.filter(pathOk);
  if (byName.some((e) => portAdmitted(e, r.port))) return undefined;
  if (policy.mode === 'all') return portAdmitted(undefined, r.port) ? undefined : 'port not allowed';
  return byName.length ? 'port not allowed' : 'not on the allowlist';
}
