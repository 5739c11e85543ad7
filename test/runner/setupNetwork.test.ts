import { promises as fs } from 'node:fs';
import net from 'node:net';
import nock from 'nock';
import type { Redis } from 'ioredis';
import { ReplayBackend } from '../../src/inference/replay.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { processJob } from '../../src/runner/processJob.js';
import type { RunnerContext } from '../../src/runner/types.js';
import { makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { SandboxConfigSchema } from '../../src/sandbox/index.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner } from './fixtures.js';
import { recordGitHub } from './githubRecorder.js';

/**
 * `setup.network: true` in .github/frognano.yml reaches the sandbox: the repository's setup commands get the egress
 * proxy (the forwarder on 127.0.0.1:3128, named by https_proxy) and nothing else, so neither a direct connection to
 * the runner's loopback services (a server on 127.0.0.1, as Redis or a model server would be) nor one through the
 * proxy gets there; the refusal is reported with its command in the status comment. The model's own commands get
 * no network at all. Real bubblewrap.
 */
describe('setup.network (repository opt-in) through the runner', () => {
  let redis: Redis;
  let loopback: net.Server;
  let loopbackPort: number;
  let loopbackConnections = 0;
  let remote: BareRemote | undefined;
  let ctx: (RunnerContext & { cleanup(): Promise<void> }) | undefined;

  beforeAll(async () => {
    redis = createRedisConnection(process.env.REDIS_URL);
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
    nock.enableNetConnect('127.0.0.1');
    loopback = net.createServer((s) => {
      loopbackConnections++;
      s.on('error', () => undefined);
      s.end('loopback\n');
    });
    await new Promise<void>((r) => loopback.listen(0, '127.0.0.1', r));
    loopbackPort = (loopback.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => loopback.close(r));
    nock.enableNetConnect();
    nock.restore();
    await redis.quit();
  });
  afterEach(async () => {
    nock.cleanAll();
    await remote?.cleanup();
    await ctx?.cleanup();
  });

  /** Direct: a plain TCP connection (no proxy). */
  const probe = (host: string, to: number) =>
    `python3 -c "import socket; socket.create_connection(('${host}', ${to}), 3); print('CONNECTED')"`;
  /** Through the forwarder the proxy variables name: a CONNECT the proxy must refuse (an address, not a name). */
  const viaProxy = (to: number) =>
    `python3 -c "import os, socket; u = os.environ['https_proxy']; assert u == 'http://127.0.0.1:3128', u
s = socket.create_connection(('127.0.0.1', 3128), 3); s.sendall(b'CONNECT 127.0.0.1:${to} HTTP/1.1\\r\\n\\r\\n')
a = s.recv(100).decode(); print(a); assert ' 403 ' in a"`;

  async function run(network: boolean) {
    const owner = uniqueOwner('net');
    const commands = [viaProxy(loopbackPort), probe('127.0.0.1', loopbackPort)];
    const setupCommands = commands.map((c) => `  - ${JSON.stringify(c)}\n`).join('');
    const config = `setup:\n  network: ${network}\nsetupCommands:\n${setupCommands}`;
    remote = await makeBareRemote(owner, 'r', { 'a.txt': 'a\n', '.github/frognano.yml': config });
    const github = recordGitHub(owner, 'r', { token: fakeInstallationToken(), installationId: 4242 });
    ctx = await runnerContext({
      redis,
      remote,
      logger: captureLogs().logger,
      backend: ReplayBackend.fromTurns([
        { content: '', tool_calls: [{ name: 'Bash', arguments: { command: probe('127.0.0.1', loopbackPort) } }] },
        { content: 'Nothing to change.', tool_calls: [] },
      ]),
    });
    ctx.sandbox = SandboxConfigSchema.parse({ kind: 'bwrap', defaultTimeoutMs: 60_000 });
    const data = jobData(owner, 'r');
    const result = await processJob(
      { id: `${owner}/r#7@1`, data, updateProgress: async () => undefined },
      ctx,
      new AbortController().signal,
    );
    const trajectory = JSON.parse(await fs.readFile(result.trajectoryPath!, 'utf8'));
    const task = String(trajectory.messages.find((m: { role: string }) => m.role === 'user').content);
    const agentSaw = String(trajectory.messages.find((m: { role: string }) => m.role === 'tool').content);
    const comments = github.statusBodies();
    return { task, agentSaw, comments };
  }

  it("opted in: the setup command has the proxy, which refuses the runner's loopback and says so; the agent has nothing", async () => {
    const { task, agentSaw, comments } = await run(true);
    expect(task).not.toContain(`Note: the setup command \`${viaProxy(loopbackPort)}\``);
    expect(task).toContain(`Note: the setup command \`${probe('127.0.0.1', loopbackPort)}\` failed`);
    expect(loopbackConnections).toBe(0);
    expect(agentSaw).toMatch(/ConnectionRefusedError/);
    expect(comments.at(-1)).toContain(`blocked: 127\\.0\\.0\\.1:${loopbackPort} (not on the allowlist)`);
  });

  it('by default: the setup command has no network either (and the model is told it failed)', async () => {
    const { task, agentSaw, comments } = await run(false);
    expect(task).toContain(`Note: the setup command \`${viaProxy(loopbackPort)}\``);
    expect(agentSaw).toMatch(/ConnectionRefusedError/);
    expect(comments.at(-1)).not.toContain('blocked:');
  });
});
