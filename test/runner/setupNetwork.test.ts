import { promises as fs } from 'node:fs';
import net from 'node:net';
import nock from 'nock';
import type { Redis } from 'ioredis';
import { ReplayBackend } from '../../src/inference/replay.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { processJob } from '../../src/runner/processJob.js';
import type { RunnerContext } from '../../src/runner/types.js';
import { makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner } from './fixtures.js';
import { recordGitHub } from './githubRecorder.js';

/**
 * `setup.network: true` in .github/frognano.yml reaches the sandbox: the repository's setup commands get network
 * (a TCP server on the runner stands in for it), the model's own commands still do not. Real bubblewrap.
 */
describe('setup.network (repository opt-in) through the runner', () => {
  let redis: Redis;
  let server: net.Server;
  let port: number;
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
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    nock.enableNetConnect();
    nock.restore();
    await redis.quit();
  });
  afterEach(async () => {
    nock.cleanAll();
    await remote?.cleanup();
    await ctx?.cleanup();
  });

  const probe = () => `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 3); print('CONNECTED')"`;

  async function run(network: boolean) {
    const owner = uniqueOwner('net');
    const config = `setup:\n  network: ${network}\nsetupCommands:\n  - ${JSON.stringify(probe())}\n`;
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
    const data = jobData(owner, 'r');
    const result = await processJob({ id: `${owner}/r#7@1`, data, updateProgress: async () => undefined }, ctx, new AbortController().signal);
    const trajectory = JSON.parse(await fs.readFile(result.trajectoryPath!, 'utf8'));
    const task = String(trajectory.messages.find((m: { role: string }) => m.role === 'user').content);
    const agentSaw = String(trajectory.messages.find((m: { role: string }) => m.role === 'tool').content);
    return { task, agentSaw };
  }

  it('opted in: the setup command reaches the network, the agent still does not', async () => {
    const { task, agentSaw } = await run(true);
    expect(task).not.toContain('Note: the setup command');
    expect(agentSaw).toContain('ConnectionRefusedError');
  });

  it('by default: the setup command has no network either (and the model is told it failed)', async () => {
    const { task, agentSaw } = await run(false);
    expect(task).toContain('Note: the setup command');
    expect(agentSaw).toContain('ConnectionRefusedError');
  });
});
