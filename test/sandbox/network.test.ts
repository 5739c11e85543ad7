/**
 * ExecOptions.network, proxy-only egress, on real docker and real bubblewrap: a setup command with network has no
 * interface but loopback, so nothing is reachable directly (a server of the test on 0.0.0.0, the docker bridge
 * gateway, 169.254.169.254, a 10.x address); its one way out is the egress proxy behind the forwarder on
 * 127.0.0.1:3128, which admits what the policy allows and refuses (and records) the rest. Names are resolved by a DNS
 * stand-in on loopback; the "allowed" upstream is a server on 127.0.0.2 that only this test's address check admits.
 * Nothing here contacts the internet or a private address: direct attempts have no route, and the proxy refuses
 * the blocked ones before connecting.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { DockerSandbox, reapStaleSandboxes, SANDBOX_LABEL } from '../../src/sandbox/docker/index.js';
import {
  addressChecker,
  parseAllowEntry,
  type EgressGrant,
  type EgressPolicy,
} from '../../src/sandbox/egress/index.js';
import { dnsResolver } from '../../src/sandbox/egress/resolve.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { checkBwrap, checkDocker, setupNetworkNote } from '../../src/sandbox/check.js';
import { BwrapSandboxConfigSchema, DockerSandboxConfigSchema } from '../../src/sandbox/config.js';
import { blockedSetupRequests, runSetupCommands } from '../../src/leaf/botCommands.js';
import { startDnsStandIn, type DnsStandIn } from '../support/dnsStandIn.js';
import { dockerForTests, outsideAddress, TEST_IMAGE } from './support.js';

const docker = await dockerForTests();
const RUN_LABEL = { 'dev.frognano.test': `network-${randomBytes(6).toString('hex')}` };
const LIMITS = { memoryMb: 300, pidsLimit: 99 };
const outside = outsideAddress();

const kinds: Array<[string, (ws: string) => Promise<Sandbox>]> = [['bwrap', (ws) => BwrapSandbox.create(ws, LIMITS)]];
if (docker) {
  kinds.push([
    'docker',
    (ws) => DockerSandbox.create(ws, { image: TEST_IMAGE, labels: RUN_LABEL, ...LIMITS }, { docker }),
  ]);
}

/** The docker bridge's gateway (the runner host as containers on the bridge see it), when there is an engine. */
async function bridgeGateway(): Promise<string | undefined> {
  if (!docker) return undefined;
  const info = (await docker.getNetwork('bridge').inspect()) as { IPAM?: { Config?: { Gateway?: string }[] } };
  return info.IPAM?.Config?.find((c) => c.Gateway)?.Gateway;
}

/** Connects straight to each host:port (no proxy); prints the interfaces, then one line per target. */
const direct = (targets: [string, number][]) => `python3 -c "import socket
print(sorted(n for _, n in socket.if_nameindex()))
for h, p in [${targets.map(([h, p]) => `('${h}', ${p})`).join(', ')}]:
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((h, p)); print('CONNECTED', h, s.recv(100).decode().strip())
    except OSError as e:
        print('unreachable', h, e.errno)"`;

/** A plain HTTP GET through the proxy variables (urllib honours http_proxy). */
const fetch = (url: string) => `python3 -c "import urllib.request, urllib.error
try:
    print('BODY', urllib.request.urlopen('${url}', timeout=20).read().decode())
except urllib.error.HTTPError as e:
    print('STATUS', e.code, e.read().decode().strip())"`;

/** CONNECT through the forwarder, then a GET inside the tunnel: what HTTPS clients do. */
const tunnel = (authority: string) => `python3 -c "import socket
s = socket.create_connection(('127.0.0.1', 3128), 20)
s.sendall(b'CONNECT ${authority} HTTP/1.1\\r\\nHost: ${authority}\\r\\n\\r\\n')
head = s.recv(1000).decode()
print('ANSWER', head.splitlines()[0])
if ' 200 ' in head:
    s.sendall(b'GET /tunnelled HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n')
    print('TUNNEL', s.recv(1000).decode().splitlines()[-1])"`;

let dns: DnsStandIn;
let upstream: http.Server;
let upstreamPort = 0;
let hostServer: net.Server;
let hostPort = 0;
let hostConnections = 0;
let gateway: string | undefined;

beforeAll(async () => {
  gateway = await bridgeGateway();
  const table: Record<string, string[]> = {
    'ok.test': ['127.0.0.2'],
    'other.test': ['127.0.0.2'],
    'meta.test': ['169.254.169.254'],
    'ten.test': ['10.203.0.7'],
    'host.test': [outside.address],
  };
  dns = await startDnsStandIn((name) => table[name]);
  upstream = http.createServer((req, res) => res.end(`upstream saw ${req.url}`));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.2', r));
  upstreamPort = (upstream.address() as net.AddressInfo).port;
  hostServer = net.createServer((c) => {
    hostConnections++;
    c.on('error', () => undefined);
    c.end('HOST-SERVICE\n');
  });
  await new Promise<void>((r) => hostServer.listen(0, '0.0.0.0', r));
  hostPort = (hostServer.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await dns.close();
  await new Promise((r) => upstream.close(r));
  await new Promise((r) => hostServer.close(r));
  if (docker) await reapStaleSandboxes(docker, 0, { labels: RUN_LABEL });
});

/** The real address check (blocked ranges, this host's addresses), except the test's upstream on 127.0.0.2. */
function grant(mode: EgressPolicy['mode'], entries: string[]): EgressGrant {
  const real = addressChecker();
  return {
    policy: { mode, allow: entries.map((e) => parseAllowEntry(e.replace('PORT', String(upstreamPort)))) },
    resolve: dnsResolver([dns.server], 1000),
    check: (a) => (a === '127.0.0.2' ? undefined : real(a)),
  };
}

describe.each(kinds)('%s: a setup command with network (proxy-only egress)', (kind, factory) => {
  let dir: string;
  let sb: Sandbox;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), `fn-net-${kind}-`));
    sb = await factory(dir);
  });
  afterAll(async () => {
    await sb?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('has only loopback: the host on 0.0.0.0, the bridge gateway, metadata and 10.x are unreachable', async () => {
    const targets: [string, number][] = [
      ['127.0.0.1', hostPort],
      [outside.address, hostPort],
      ['169.254.169.254', 80],
      ['10.203.0.7', 80],
    ];
    if (gateway) targets.push([gateway, hostPort]);
    const before = hostConnections;
    const r = await sb.exec(direct(targets), { network: grant('all', []), clean: true, timeoutMs: 60_000 });
    expect(r.stdout).toContain("['lo']");
    expect(r.stdout).not.toContain('CONNECTED');
    expect(r.stdout.match(/^unreachable /gm)).toHaveLength(targets.length);
    expect(hostConnections).toBe(before);
  });

  it('reaches an allowlisted name through the proxy (plain HTTP and CONNECT), as the sandbox user', async () => {
    const g = grant('registries', ['ok.test:PORT']);
    const r = await sb.exec(
      `${fetch(`http://ok.test:${upstreamPort}/simple/`)}; ${tunnel(`ok.test:${upstreamPort}`)}; id -u; ` +
        'echo fetched > from-setup.txt',
      { network: g, clean: true, timeoutMs: 60_000 },
    );
    expect(r.stdout).toContain('BODY upstream saw /simple/');
    expect(r.stdout).toContain('ANSWER HTTP/1.1 200 Connection Established');
    expect(r.stdout).toContain('TUNNEL upstream saw /tunnelled');
    expect(r.stdout).toMatch(/\n[1-9]\d*\n/); // not root
    expect(r.blocked).toEqual([]);
    expect(await readFile(path.join(dir, 'from-setup.txt'), 'utf8')).toBe('fetched\n');
  });

  it('the forwarder takes no module from the workspace (the model may have planted one)', async () => {
    for (const name of ['socket.py', 'threading.py', 'os.py'])
      await writeFile(path.join(dir, name), "raise SystemExit('PLANTED MODULE RAN')\n");
    try {
      const r = await sb.exec(`cd / && ${fetch(`http://ok.test:${upstreamPort}/planted`)}`, {
        network: grant('registries', ['ok.test:PORT']),
        clean: true,
        timeoutMs: 60_000,
      });
      expect(r.stdout + r.stderr).not.toContain('PLANTED');
      expect(r.stdout).toContain('BODY upstream saw /planted');
    } finally {
      for (const name of ['socket.py', 'threading.py', 'os.py']) await rm(path.join(dir, name), { force: true });
    }
  });

  it('refuses and records names off the allowlist and names resolving to blocked addresses', async () => {
    const g = grant('registries', ['ok.test:PORT', 'meta.test', 'ten.test', 'host.test:PORT']);
    const r = await sb.exec(
      [
        fetch(`http://other.test:${upstreamPort}/`),
        fetch('http://meta.test/latest/meta-data/'),
        tunnel('ten.test:443'),
        tunnel(`host.test:${upstreamPort}`),
        tunnel('169.254.169.254:80'),
      ].join('; '),
      { network: g, clean: true, timeoutMs: 60_000 },
    );
    expect(r.stdout).not.toContain('BODY');
    expect(r.stdout).not.toContain('TUNNEL');
    expect(r.stdout.match(/STATUS 403|ANSWER HTTP\/1.1 403/g)).toHaveLength(5);
    const seen = (r.blocked ?? []).map((b) => `${b.host}:${b.port} ${b.reason}`);
    expect(seen).toEqual([
      `other.test:${upstreamPort} not on the allowlist`,
      'meta.test:80 resolves to a private, loopback, link-local or reserved address',
      'ten.test:443 resolves to a private, loopback, link-local or reserved address',
      `host.test:${upstreamPort} resolves to an address of the runner host`,
      '169.254.169.254:80 not on the allowlist',
    ]);
  });

  it('mode all: any name, never a blocked address', async () => {
    const r = await sb.exec(`${fetch(`http://other.test:${upstreamPort}/x`)}; ${tunnel('meta.test:443')}`, {
      network: grant('all', []),
      clean: true,
      timeoutMs: 60_000,
    });
    // `all` still admits only 80 and 443 without an entry naming the port.
    expect(r.stdout).toContain('STATUS 403 egress proxy: port not allowed');
    expect(r.stdout).toContain('ANSWER HTTP/1.1 403');
    expect(r.blocked?.map((b) => b.reason)).toEqual([
      'port not allowed',
      'resolves to a private, loopback, link-local or reserved address',
    ]);
  });

  it('reports each refusal with the setup command that made it (runSetupCommands)', async () => {
    const commands = [fetch('http://other.test/'), 'true', tunnel('meta.test:443')];
    const { results } = await runSetupCommands(sb, commands, {
      timeoutMs: 60_000,
      network: grant('registries', ['meta.test']),
    });
    expect(blockedSetupRequests(results).map((b) => [b.command, b.host, b.reason.slice(0, 20)])).toEqual([
      [commands[0], 'other.test', 'not on the allowlist'],
      [commands[2], 'meta.test', 'resolves to a privat'],
    ]);
  });

  it('runs with no network at all, and says why, when the proxy cannot start', async () => {
    const g = { ...grant('all', []), socketParent: '/nonexistent/frognano-egress-test' };
    const r = await sb.exec(direct([['127.0.0.1', 3128]]), { network: g, clean: true });
    expect(r.stdout).toContain("['lo']");
    expect(r.stdout).toMatch(/^unreachable 127\.0\.0\.1 111$/m);
    expect(r.stderr).toMatch(/^sandbox: this setup command ran without network: .*ENOENT/m);
    expect(r.blocked).toBeUndefined();
  });

  it('frognano doctor names the setup-network mode it offers', async () => {
    const check =
      kind === 'docker'
        ? await checkDocker(DockerSandboxConfigSchema.parse({ kind: 'docker', image: TEST_IMAGE, labels: RUN_LABEL }), {
            smokeTest: true,
          })
        : await checkBwrap(BwrapSandboxConfigSchema.parse({ kind: 'bwrap' }));
    expect(check.message).toMatch(/; setup\.network: proxy-only egress works, up to `registries`/);
    const off = await setupNetworkNote(sb, { FROGNANO_SETUP_NETWORK: 'off' });
    expect(off).toBe('; setup.network: off on this runner (FROGNANO_SETUP_NETWORK=off)');
  });

  it('leaves no network, socket or proxy variable to the commands after it, and kills what it left', async () => {
    const m = 20_000 + (randomBytes(2).readUInt16BE() % 40_000);
    await sb.exec(`(setsid sleep ${m} > /dev/null 2>&1 &); echo started`, { network: grant('all', []) });
    const r = await sb.exec(
      `ls /run/frognano-egress 2>&1; echo "proxy=[$http_proxy]"; ps -eo args | grep -c "^sleep ${m}" || true`,
    );
    expect(r.stdout).toMatch(/No such file or directory/);
    expect(r.stdout).toContain('proxy=[]');
    expect(r.stdout.trim().split('\n').at(-1)).toBe('0');
    expect(r.blocked).toBeUndefined();
    if (docker && kind === 'docker') {
      const left = await docker.listContainers({
        all: true,
        filters: { label: [`${SANDBOX_LABEL}=1`, `dev.frognano.test=${RUN_LABEL['dev.frognano.test']}`] },
      });
      expect(left).toHaveLength(1);
    }
  });
});

/**
 * A real request to a package registry through the proxy with the default `registries` allowlist. Tests here reach no outside
 * address, so it runs only when a person asks for it on a machine that may reach PyPI (FROGNANO_TEST_REGISTRY=1);
 * otherwise it says it was skipped and why.
 */
const registry = process.env.FROGNANO_TEST_REGISTRY === '1';
if (!registry)
  console.log('SKIPPING the registry request through the egress proxy: set FROGNANO_TEST_REGISTRY=1 (reaches PyPI)');
(registry ? describe.each(kinds) : describe.skip.each(kinds))(
  '%s: the default allowlist, for real',
  (_kind, factory) => {
    it('reads a package index page from PyPI through the proxy, and a host off the list is refused', async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-net-registry-'));
      const sb = await factory(dir);
      try {
        const r = await sb.exec(
          // urllib honours https_proxy like pip does; a package index page and a host off the list.
          'python3 -c "import urllib.request as u; print(u.urlopen(\'https://pypi.org/simple/six/\', timeout=30).read()[:4000])"; ' +
            'python3 -c "import urllib.request as u; u.urlopen(\'https://example.com/\', timeout=10)" 2>&1 | tail -1',
          { network: true, clean: true, timeoutMs: 120_000 },
        );
        expect(r.stdout).toMatch(/six-[0-9.]+/);
        expect(r.blocked?.map((b) => b.host)).toContain('example.com');
      } finally {
        await sb.close();
        await rm(dir, { recursive: true, force: true });
      }
    }, 180_000);
  },
);
