/**
 * The egress proxy as a security boundary: a table of hostile requests, each refused with its reason and recorded;
 * names resolved by the proxy itself (a DNS stand-in on loopback), checked, and connected to without a second
 * lookup; the caps. Positive paths go to a server on 127.0.0.2, admitted only by this test's own address check.
 */
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { addressChecker, EgressProxy, parseAllowEntry, type EgressPolicy } from '../../../src/sandbox/egress/index.js';
import { dnsResolver } from '../../../src/sandbox/egress/resolve.js';
import { startDnsStandIn, type DnsStandIn } from '../../support/dnsStandIn.js';

let dns: DnsStandIn;
let upstream: http.Server;
let upstreamPort = 0;
const seen: { host?: string; local?: string }[] = [];
let flip = ['127.0.0.2'];

const TABLE: Record<string, string[]> = {
  'rebind.test': ['127.0.0.1'],
  'meta.test': ['169.254.169.254'],
  'mixed.test': ['93.184.215.14', '10.1.2.3'],
  'v6.test': ['::ffff:7f00:1'],
  'ula.test': ['fd00::1'],
  'ok.test': ['127.0.0.2'],
  'a.wild.test': ['127.0.0.2'],
  'prefix.test': ['127.0.0.2'],
};

beforeAll(async () => {
  dns = await startDnsStandIn((name) => (name === 'flip.test' ? flip : TABLE[name]));
  upstream = http.createServer((req, res) => {
    seen.push({ host: req.headers.host, local: req.socket.localAddress });
    res.end(`hello ${req.url}`);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.2', r));
  upstreamPort = (upstream.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await dns.close();
  await new Promise((r) => upstream.close(r));
});

const real = addressChecker(['93.184.216.34']);
/** The real check, except the test's own upstream on 127.0.0.2. */
const testCheck = (a: string) => (a === '127.0.0.2' ? undefined : real(a));

function policy(mode: EgressPolicy['mode'], entries: string[]): EgressPolicy {
  return { mode, allow: entries.map(parseAllowEntry) };
}
const ENTRIES = [
  'rebind.test',
  'META.test',
  'mixed.test',
  'v6.test',
  'ula.test',
  'nxdomain.test',
  'flip.test:PORT',
  'ok.test:PORT',
  '*.wild.test:PORT',
  'http://prefix.test:PORT/simple/',
];

async function withProxy<T>(p: EgressPolicy, fn: (port: number, proxy: EgressProxy) => Promise<T>, caps = {}) {
  const fixed = { ...p, allow: p.allow.map((e) => (e.port === 1 ? { ...e, port: upstreamPort } : e)) };
  const proxy = new EgressProxy({ policy: fixed, resolve: dnsResolver([dns.server], 1000), check: testCheck, caps });
  const port = (await proxy.listen(0)) as number;
  try {
    return await fn(port, proxy);
  } finally {
    await proxy.close();
  }
}
const entries = () => ENTRIES.map((e) => e.replace('PORT', '1'));

/** Sends raw bytes to the proxy; the status line and body of its answer. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(text));
    let out = '';
    s.on('data', (c) => {
      out += c.toString('latin1');
      if (/^HTTP\/1\.1 200 Connection/.test(out)) s.end();
    });
    s.on('close', () => resolve(out));
    s.on('error', reject);
    setTimeout(() => s.destroy(new Error(`no answer from the proxy to ${JSON.stringify(text)}`)), 5000).unref();
  });
}
const get = (url: string, host?: string) =>
  `GET ${url} HTTP/1.1\r\n${host === undefined ? '' : `Host: ${host}\r\n`}Connection: close\r\n\r\n`;
const connect = (target: string) => `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`;

const HOSTILE: [string, EgressPolicy['mode'], string, string][] = [
  ['hex/short IPv4 literal', 'registries', get('http://0x7f.1/', '0x7f.1'), 'not on the allowlist'],
  ['hex/short IPv4 literal, mode all', 'all', get('http://0x7f.1/', '0x7f.1'), 'resolves to a private'],
  ['127.1, mode all', 'all', get('http://127.1/', '127.1'), 'resolves to a private'],
  ['decimal IPv4, mode all', 'all', get('http://2130706433/', '2130706433'), 'resolves to a private'],
  [
    'IPv4-mapped IPv6, mode all',
    'all',
    get('http://[::ffff:127.0.0.1]/', '[::ffff:127.0.0.1]'),
    'resolves to a private',
  ],
  ['IPv6 loopback, mode all', 'all', connect('[::1]:443'), 'resolves to a private'],
  ['IPv4-compatible IPv6, mode all', 'all', connect('[::7f00:1]:443'), 'resolves to a private'],
  ['link-local v6, mode all', 'all', connect('[fe80::1]:443'), 'resolves to a private'],
  ['metadata by IP, mode all', 'all', connect('169.254.169.254:80'), 'resolves to a private'],
  ['shared range, mode all', 'all', connect('100.64.0.1:443'), 'resolves to a private'],
  ['0/8, mode all', 'all', connect('0.0.0.0:443'), 'resolves to a private'],
  ['multicast, mode all', 'all', connect('224.0.0.1:443'), 'resolves to a private'],
  ["the runner's own address, mode all", 'all', connect('93.184.216.34:443'), 'an address of the runner host'],
  ['metadata by IP', 'registries', connect('169.254.169.254:443'), 'not on the allowlist'],
  ['userinfo', 'all', get('http://ok.test@127.0.0.1/', '127.0.0.1'), 'userinfo'],
  ['userinfo to an allowed name', 'registries', get('http://x:y@rebind.test/', 'rebind.test'), 'userinfo'],
  ['Host header mismatch', 'registries', get('http://ok.test/', '127.0.0.1'), 'Host header'],
  ['Host header port mismatch', 'registries', get('http://rebind.test/', 'rebind.test:8080'), 'Host header'],
  ['origin-form (not a proxy request)', 'all', get('/latest/meta-data/', '169.254.169.254'), 'not an absolute'],
  ['https absolute-form', 'all', get('https://ok.test/', 'ok.test'), 'not an absolute'],
  [
    'name resolving to loopback (upper case, trailing dot)',
    'registries',
    connect('REBIND.TEST.:443'),
    'resolves to a private',
  ],
  ['name resolving to 169.254.169.254', 'registries', connect('meta.test:443'), 'resolves to a private'],
  ['name with one private address among public ones', 'registries', connect('mixed.test:443'), 'resolves to a private'],
  ['name resolving to IPv4-mapped loopback', 'registries', connect('v6.test:443'), 'resolves to a private'],
  ['name resolving to a unique-local IPv6', 'registries', connect('ula.test:443'), 'resolves to a private'],
  ['a port the entry does not name', 'registries', connect('rebind.test:22'), 'port not allowed'],
  ['a port other than 80/443, mode all', 'all', connect('rebind.test:6379'), 'port not allowed'],
  ['CONNECT with userinfo', 'all', connect('user@ok.test:443'), 'malformed CONNECT'],
  ['CONNECT without a port', 'all', connect('ok.test'), 'malformed CONNECT'],
  ['CONNECT with a path', 'all', connect('ok.test:443/x'), 'malformed CONNECT'],
  ['a name not on the allowlist', 'registries', connect('unknown.test:443'), 'not on the allowlist'],
  ['the wildcard parent itself', 'registries', connect('wild.test:443'), 'not on the allowlist'],
  ['a look-alike suffix', 'registries', connect('evilrebind.test:443'), 'not on the allowlist'],
  ['a name that does not resolve', 'registries', connect('nxdomain.test:443'), 'name does not resolve'],
];

describe('EgressProxy: hostile requests', () => {
  test.each(HOSTILE)('%s is refused', async (_name, mode, request, reason) => {
    await withProxy(policy(mode, entries()), async (port, proxy) => {
      const out = await raw(port, request);
      expect(out).toMatch(/^HTTP\/1\.1 (403|400)/);
      expect(out).not.toMatch(/hello/);
      if (out.startsWith('HTTP/1.1 403')) expect(out).toContain(reason);
      expect(proxy.blocked().map((b) => b.reason)).toEqual([expect.stringContaining(reason)]);
    });
  });

  test('a path-prefix entry admits only its prefix over plain HTTP', async () => {
    await withProxy(policy('registries', entries()), async (port, proxy) => {
      const host = `prefix.test:${upstreamPort}`;
      expect(await raw(port, get(`http://${host}/simple/pkg/`, host))).toMatch(
        /^HTTP\/1\.1 200[^]*hello \/simple\/pkg\//,
      );
      expect(await raw(port, get(`http://${host}/other/`, host))).toMatch(/^HTTP\/1\.1 403/);
      expect(proxy.blocked()).toEqual([
        { host: 'prefix.test', port: upstreamPort, reason: 'not on the allowlist', count: 1 },
      ]);
    });
  });
});

describe('EgressProxy: what it lets through', () => {
  test('forwards plain HTTP to the checked address with the URL host as Host; repeats are counted', async () => {
    await withProxy(policy('registries', entries()), async (port, proxy) => {
      const host = `a.wild.test:${upstreamPort}`;
      const out = await raw(port, get(`http://${host}/x?y=1`, host));
      expect(out).toMatch(/^HTTP\/1\.1 200[^]*hello \/x\?y=1/);
      expect(seen.at(-1)).toEqual({ host, local: '127.0.0.2' });
      await raw(port, connect('unknown.test:443'));
      await raw(port, connect('unknown.test:443'));
      expect(proxy.blocked()).toEqual([{ host: 'unknown.test', port: 443, reason: 'not on the allowlist', count: 2 }]);
    });
  });

  test('connects a CONNECT tunnel to the address it resolved once, whatever the name resolves to later', async () => {
    flip = ['127.0.0.2'];
    await withProxy(policy('registries', entries()), async (port) => {
      const before = dns.queries.get('flip.test/1') ?? 0;
      const s = net.connect(port, '127.0.0.1');
      s.write(connect(`flip.test:${upstreamPort}`));
      const reply = await new Promise<string>((resolve) => s.once('data', (c) => resolve(c.toString())));
      expect(reply).toMatch(/^HTTP\/1\.1 200/);
      flip = ['127.0.0.1']; // the rebinding answer comes too late: the tunnel is to the checked address
      s.write(`GET /tunnel HTTP/1.1\r\nHost: flip.test\r\nConnection: close\r\n\r\n`);
      const body = await new Promise<string>((resolve) => {
        let t = '';
        s.on('data', (c) => (t += c.toString()));
        s.on('close', () => resolve(t));
      });
      expect(body).toContain('hello /tunnel');
      expect(seen.at(-1)?.local).toBe('127.0.0.2');
      expect(dns.queries.get('flip.test/1')).toBe(before + 1);
      expect(await raw(port, connect(`flip.test:${upstreamPort}`))).toMatch(/^HTTP\/1\.1 403[^]*resolves to a private/);
    });
  });

  test('the npm registry through a CONNECT tunnel (real DNS, the real address check)', async () => {
    const proxy = new EgressProxy({ policy: policy('registries', ['registry.npmjs.org']) });
    const port = (await proxy.listen(0)) as number;
    try {
      const s = net.connect(port, '127.0.0.1');
      s.write(connect('registry.npmjs.org:443'));
      await new Promise<void>((resolve, reject) => {
        s.once('data', (c) => (/^HTTP\/1\.1 200/.test(c.toString()) ? resolve() : reject(new Error(c.toString()))));
      });
      const t = tls.connect({ socket: s, servername: 'registry.npmjs.org' });
      t.write('GET /-/ping HTTP/1.1\r\nHost: registry.npmjs.org\r\nConnection: close\r\n\r\n');
      const text = await new Promise<string>((resolve) => {
        let b = '';
        t.on('data', (c) => (b += c.toString()));
        t.on('end', () => resolve(b));
      });
      expect(text).toMatch(/^HTTP\/1\.1 200/);
    } finally {
      await proxy.close();
    }
  }, 30_000);
});

describe('EgressProxy: caps', () => {
  test('refuses connections past maxConnections and oversized headers', async () => {
    await withProxy(
      policy('registries', entries()),
      async (port, proxy) => {
        const s = net.connect(port, '127.0.0.1');
        s.write(connect(`ok.test:${upstreamPort}`));
        await new Promise((resolve) => s.once('data', resolve));
        expect(await raw(port, connect(`ok.test:${upstreamPort}`))).toMatch(/^HTTP\/1\.1 403[^]*too many connections/);
        s.destroy();
        const big = `GET http://ok.test/ HTTP/1.1\r\nHost: ok.test\r\nX-Big: ${'a'.repeat(4096)}\r\n\r\n`;
        expect(await raw(port, big)).toMatch(/^HTTP\/1\.1 4\d\d/);
        expect(proxy.blocked().map((b) => b.reason)).toEqual(['too many connections']);
      },
      { maxConnections: 2, maxHeaderBytes: 1024 },
    );
  });
});
