import { isIP } from 'node:net';
import { normalizeHost } from './allowlist.js';

/** Where a proxied request goes, as the proxy understood it; or why it is refused before any lookup. */
export type Target =
  | { ok: true; host: string; port: number; ip: boolean; path?: string; hostHeader?: string }
  | { ok: false; host: string; port: number; why: string };

const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** The URL parser's view of a host (it turns `0x7f.1`, `127.1`, `2130706433` into 127.0.0.1), normalized. */
function canonicalHost(raw: string): string | undefined {
  try {
    const h = new URL(`http://${raw}/`).hostname;
    const bare = h.startsWith('[') ? h.slice(1, -1) : h;
    if (isIP(bare)) return bare;
    const name = normalizeHost(bare);
    return name.length <= 253 && name.split('.').every((l) => LABEL.test(l)) ? name : undefined;
  } catch {
    return undefined;
  }
}

/** CONNECT's request target: exactly `host:port` (RFC 9110 authority-form), no userinfo, no path. */
export function connectTarget(authority: string): Target {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:/@[\]?#]+):(\d{1,5})$/.exec(authority);
  const port = m ? Number(m[2]) : 0;
  const host = m ? canonicalHost(m[1]!) : undefined;
  if (!m || !host || port < 1 || port > 65535) {
    return { ok: false, host: authority.slice(0, 100), port, why: 'malformed CONNECT target' };
  }
  return { ok: true, host, port, ip: isIP(host) !== 0 };
}

/**
 * A plain HTTP request's target: absolute-form `http://host[:port]/path` only (HTTPS goes through CONNECT), no
 * userinfo, and a Host header (if any) naming the same host and port, so the server sees the host the proxy checked.
 */
export function forwardTarget(url: string, hostHeader: string | undefined): Target {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return { ok: false, host: url.slice(0, 100), port: 0, why: 'not an absolute http:// URL' };
  }
  const port = u.port ? Number(u.port) : 80;
  const host = canonicalHost(u.host) ?? u.hostname.slice(0, 100);
  const fail = (why: string): Target => ({ ok: false, host, port, why });
  if (u.protocol !== 'http:' || !/^http:\/\//i.test(url)) return fail('not an absolute http:// URL');
  if (u.username || u.password || /^http:\/\/[^/]*@/i.test(url)) return fail('userinfo in the URL');
  if (!canonicalHost(u.host)) return fail('malformed host');
  if (hostHeader !== undefined) {
    const hm = /^(\[[0-9a-fA-F:.]+\]|[^\s:/@[\]]+)(?::(\d{1,5}))?$/.exec(hostHeader.trim());
    const same = hm && canonicalHost(hm[1]!) === host && (hm[2] ? Number(hm[2]) : 80) === port;
    if (!same) return fail('Host header names another host than the URL');
  }
  return { ok: true, host, port, ip: isIP(host) !== 0, path: u.pathname + u.search, hostHeader: u.host };
}
