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
import { outsideAddress } from '../sandbox/support.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner } from './fixtures.js';
import { recordGitHub } from './githubRecorder.js';

/**
 * `setup.network: true` in .github/frognano.yml reaches the sandbox: the repository's setup commands get network
 * (a TCP server on a non-loopback address of the runner stands in for it), but not the runner's loopback services
 * (a second server on 127.0.0.1, as Redis or a model server would be); the model's own commands get neither. Real
 * bubblewrap.
 */
const outside = outsideAddress();
describe('setup.network (repository opt-in) through the runner', () => {
  let redis: Redis;
  let server: net.Server;
  let port: number;
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
    server = net.createServer((s) => {
      // The probe closes as soon as it has connected: our greeting may then meet a reset, which is no failure.
      s.on('error', () => undefined);
      s.end('hello\n');
    });
    await new Promise<void>((r) => server.listen(0, outside.address, r));
    port = (server.address() as net.AddressInfo).port;
    loopback = net.createServer((s) => {
      loopbackConnections++;
      s.on('error', () => undefined);
      s.end('loopback\n');
    });
    await new Promise<void>((r) => loopback.listen(0, '127.0.0.1', r));
    loopbackPort = (loopback.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
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

  const probe = (host = outside.address, to = port) =>
    `python3 -c "import socket; socket.create_connection(('${host}', ${to}), 3); print('CONNECTED')"`;

  async function run(network: boolean) {
    const owner = uniqueOwner('net');
    const setupCommands = [probe(), probe('127.0.0.1', loopbackPort)].map((c) => `  - ${JSON.stringify(c)}\n`).join('');
    const config = `setup:\n  network: ${network}\nsetupCommands:\n${setupCommands}`;
    remote = await makeBareRemote(owner, 'r', { 'a.txt': 'a\n', '.github/frognano.yml': config });
    recordGitHub(owner, 'r', { token: fakeInstallationToken(), installationId: 4242 });
    ctx = await runnerContext({
      redis,
      remote,
      logger: captureLogs().logger,
      backend: ReplayBackend.fromTurns([
        { content: '', tool_calls: [{ name: 'Bash', arguments: { command: probe() } }] },
        { content: 'Nothing to change.', tool_calls: [] },
      ]),
    });
    // Only the test's own server may be let through: the rest of the private ranges stay blocked.
    ctx.sandbox = SandboxConfigSchema.parse({
      kind: 'bwrap',
      defaultTimeoutMs: 60_000,
    });
    const data = jobData(owner, 'r');
    const result = await processJob(
      { id: `${owner}/r#7@1`, data, updateProgress: async () => undefined },
      ctx,
      new AbortController().signal,
    );
    const trajectory = JSON.parse(await fs.readFile(result.trajectoryPath!, 'utf8'));
    const task = String(trajectory.messages.find((m: { role: string }) => m.role === 'user').content);
    const agentSaw = String(trajectory.messages.find((m: { role: string }) => m.role === 'tool').content);
    return { task, agentSaw };
  }

  it("opted in: the setup command reaches the network but not the runner's loopback; the agent reaches neither", async () => {
    const { task, agentSaw } = await run(true);
    expect(task).not.toContain(`Note: the setup command \`${probe()}\``);
    expect(task).toContain(`Note: the setup command \`${probe('127.0.0.1', loopbackPort)}\` failed`);
    expect(loopbackConnections).toBe(0);
    expect(agentSaw).toMatch(/ConnectionRefusedError|OSError: \[Errno 101\] Network is unreachable/);
  });

  it('by default: the setup command has no network either (and the model is told it failed)', async () => {
    const { task, agentSaw } = await run(false);
    expect(task).toContain(`Note: the setup command \`${probe()}\``);
    expect(agentSaw).toMatch(/ConnectionRefusedError|OSError: \[Errno 101\] Network is unreachable/);
  });
});
