import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/**
 * Where the app is, as the browser sees it: the OAuth `redirect_uri` and the cookies' `Secure` flag follow it.
 * With a public URL, only that. Without one, a request's `Host` and `X-Forwarded-*` headers are believed only when
 * it comes from a configured proxy address (FROGNANO_TRUSTED_PROXIES); anyone else could write them.
 */
export interface OriginSettings {
  publicUrl?: string;
  trustedProxies?: BlockList;
}

export interface RequestOrigin {
  /** `https://host[:port]`; null when nothing trustworthy names it. */
  base: string | null;
  secure: boolean;
}

const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9-]{1,63})*|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;

export function requestOrigin(req: IncomingMessage, o: OriginSettings): RequestOrigin {
  if (o.publicUrl) return { base: o.publicUrl.replace(/\/+$/, ''), secure: o.publicUrl.startsWith('https:') };
  const encrypted = Boolean((req.socket as { encrypted?: boolean }).encrypted);
  if (!o.trustedProxies || !fromProxy(req, o.trustedProxies)) return { base: null, secure: encrypted };
  const proto = firstValue(req.headers['x-forwarded-proto'])?.toLowerCase();
  const scheme = proto === 'https' || proto === 'http' ? proto : encrypted ? 'https' : 'http';
  const host = firstValue(req.headers['x-forwarded-host']) ?? req.headers.host;
  return { base: host && HOST.test(host) ? `${scheme}://${host}` : null, secure: scheme === 'https' };
}

function fromProxy(req: IncomingMessage, proxies: BlockList): boolean {
  const address = req.socket.remoteAddress;
  if (!address) return false;
  return proxies.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** The first of a comma-separated header (the hop nearest the client that the proxy wrote). */
function firstValue(h: string | string[] | undefined): string | undefined {
  const v = (Array.isArray(h) ? h[0] : h)?.split(',')[0]?.trim();
  return v || undefined;
}

/** FROGNANO_TRUSTED_PROXIES: addresses or CIDR ranges, comma-separated (`127.0.0.1, 10.0.0.0/8, fd00::/8`); throws on a bad entry. */
export function parseTrustedProxies(raw: string): BlockList {
  const list = new BlockList();
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0 || entries.length > 100) throw new Error('expected 1 to 100 addresses or CIDR ranges');
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const type = isIP(address ?? '');
    const max = type === 6 ? 128 : 32;
    if (!type || extra !== undefined || (bits !== undefined && !/^[0-9]{1,3}$/.test(bits)) || Number(bits) > max)
      throw new Error(`"${entry}" is not an IP address or CIDR range`);
    const family = type === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address!, family);
    else list.addSubnet(address!, Number(bits), family);
  }
  return list;
}
