/**
 * ExecOptions.network: the setup commands of a repository that opted in get network; nothing else does, before or
 * after. A TCP server on the host stands in for "the network".
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { checkBwrap } from '../../src/sandbox/check.js';
import { BwrapSandboxConfigSchema } from '../../src/sandbox/config.js';
import { DockerSandbox, reapStaleSandboxes, SANDBOX_LABEL } from '../../src/sandbox/docker/index.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { SETUP_NETWORK_BLOCKED } from '../../src/sandbox/userNetwork.js';
import { dockerForTests, outsideAddress, privateHostAddress, TEST_IMAGE } from './support.js';

const docker = await dockerForTests();
const RUN_LABEL = { 'dev.frognano.test': `network-${randomBytes(6).toString('hex')}` };
const LIMITS = { memoryMb: 300, pidsLimit: 99 };

/** "The network" for bwrap: a non-loopback address of this machine, let through even if it is a private one. */
const outside = outsideAddress();
const kinds: Array<[string, (ws: string) => Promise<Sandbox>]> = [
  ['bwrap', (ws) => BwrapSandbox.create(ws, { ...LIMITS, setupNetworkBlocked: outside.blockedWithout })],
];
if (docker) {
  kinds.push([
    'docker',
    (ws) => DockerSandbox.create(ws, { image: TEST_IMAGE, labels: RUN_LABEL, ...LIMITS }, { docker }),
  ]);
}

/** Connects to the host server: bwrap at the machine's outside address, docker through its gateway. */
const probe = (port: number, viaGateway: boolean, host = outside.address) => `python3 -c "import socket
gw = '${host}'
for line in open('/proc/net/route').read().splitlines()[1:]:
    f = line.split()
    if ${viaGateway ? 'True' : 'False'} and f[1] == '00000000':
        gw = socket.inet_ntoa(bytes.fromhex(f[2])[::-1])
print([n for _, n in socket.if_nameindex()])
s = socket.socket(); s.settimeout(3)
try:
    s.connect((gw, ${port})); print('CONNECTED', s.recv(100).decode().strip())
except OSError as e:
    print('refused', e.errno)"`;

describe.each(kinds)('%s: a command with network', (kind, factory) => {
  let dir: string;
  let sb: Sandbox;
  let server: net.Server;
  let port: number;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), `fn-net-${kind}-`));
    sb = await factory(dir);
    server = net.createServer((c) => c.end('HELLO-FROM-HOST\n'));
    await new Promise<void>((res) => server.listen(0, '0.0.0.0', res));
    port = (server.address() as net.AddressInfo).port;
  });
  const listenOn = async (host: string): Promise<net.Server> => {
    const s = net.createServer((c) => c.end('HOST-LOOPBACK-SERVICE\n'));
    await new Promise<void>((res) => s.listen(0, host, res));
    return s;
  };
  afterAll(async () => {
    await new Promise((res) => server.close(res));
    await sb?.close();
    if (docker) await reapStaleSandboxes(docker, 0, { labels: RUN_LABEL });
    await rm(dir, { recursive: true, force: true });
  });

  it('reaches the network, writes the same workspace, under the same user and limits', async () => {
    const r = await sb.exec(
      `${probe(port, kind === 'docker')}; id -u; echo fetched > from-setup.txt; ` +
        'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || true',
      { network: true, timeoutMs: 60_000 },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('CONNECTED HELLO-FROM-HOST');
    expect(r.stdout).not.toContain("['lo']\n");
    expect(r.stdout).toMatch(/\n[1-9]\d*\n/); // not root
    if (kind === 'docker') expect(r.stdout).toContain(String(LIMITS.memoryMb * 1024 * 1024));
    expect(await readFile(path.join(dir, 'from-setup.txt'), 'utf8')).toBe('fetched\n');
    expect((await sb.exec('cat from-setup.txt')).stdout).toBe('fetched\n');
  });

  it('leaves no network, and no extra container, to the commands after it', async () => {
    await sb.exec('true', { network: true });
    const r = await sb.exec(probe(port, kind === 'docker'));
    expect(r.stdout).toContain("['lo']");
    expect(r.stdout).toMatch(/refused \d+/);
    if (docker && kind === 'docker') {
      const left = await docker.listContainers({
        all: true,
        filters: { label: [`${SANDBOX_LABEL}=1`, `dev.frognano.test=${RUN_LABEL['dev.frognano.test']}`] },
      });
      expect(left).toHaveLength(1);
    }
  });

  it("cannot reach the host's loopback services (127.0.0.1, or the gateway in front of them)", async () => {
    const lo = await listenOn('127.0.0.1');
    try {
      const loPort = (lo.address() as net.AddressInfo).port;
      for (const viaGateway of [false, true]) {
        const r = await sb.exec(probe(loPort, viaGateway, '127.0.0.1'), { network: true, timeoutMs: 60_000 });
        expect(r.stdout).toMatch(/refused \d+/);
        expect(r.stdout).not.toContain('HOST-LOOPBACK-SERVICE');
      }
      // ... while the outside stays reachable in the same sandbox.
      expect((await sb.exec(probe(port, kind === 'docker'), { network: true })).stdout).toContain(
        'CONNECTED HELLO-FROM-HOST',
      );
    } finally {
      await new Promise((res) => lo.close(res));
    }
  });

  it('still kills what the command left running', async () => {
    const m = 20_000 + (randomBytes(2).readUInt16BE() % 40_000);
    const r = await sb.exec(`(setsid sleep ${m} > /dev/null 2>&1 &); echo started`, { network: true });
    expect(r.stdout).toBe('started\n');
    const ps = await sb.exec(`ps -eo args | grep -c "^sleep ${m}" || true`, { network: true });
    expect(ps.stdout.trim()).toBe('0');
  });
});

describe('bwrap: a setup command with network and the private ranges', () => {
  it('runs without network, and says why, when slirp4netns cannot start', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-net-noslirp-'));
    const sb = await BwrapSandbox.create(dir, { ...LIMITS, slirp4netnsPath: '/nonexistent/slirp4netns' });
    try {
      const r = await sb.exec(probe(1, false), { network: true, timeoutMs: 30_000 });
      expect(r.stdout).toContain("['lo']");
      expect(r.stderr).toContain(
        'sandbox: this setup command ran without network: cannot run /nonexistent/slirp4netns',
      );
      const check = await checkBwrap(
        BwrapSandboxConfigSchema.parse({ kind: 'bwrap', ...LIMITS, slirp4netnsPath: '/nonexistent/slirp4netns' }),
      );
      expect(check.message).toMatch(
        /^bubblewrap works .*; setup commands with network \(setup.network\) would have none: cannot run/,
      );
    } finally {
      await sb.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  const target = privateHostAddress();
  (target ? it : it.skip)(`has no route to a private address of this machine (${target ?? 'none here'})`, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-net-private-'));
    const sb = await BwrapSandbox.create(dir, LIMITS);
    const server = net.createServer((c) => c.end('PRIVATE-SERVICE\n'));
    await new Promise<void>((res) => server.listen(0, target!, res));
    try {
      const r = await sb.exec(probe((server.address() as net.AddressInfo).port, false, target!), { network: true });
      expect(r.stdout).toMatch(/refused \d+/);
      expect(r.stdout).not.toContain('PRIVATE-SERVICE');
      expect(SETUP_NETWORK_BLOCKED).toContain('169.254.0.0/16');
      // The command cannot take the route away: it holds no capability in its network namespace.
      const del = await sb.exec('ip route del prohibit 10.0.0.0/8 || echo cannot', { network: true });
      expect(del.stdout).toContain('cannot');
    } finally {
      await new Promise((res) => server.close(res));
      await sb.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
