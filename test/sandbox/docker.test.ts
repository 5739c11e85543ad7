import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import {
  DockerSandbox,
  reapStaleSandboxes,
  SANDBOX_LABEL,
  SandboxUnavailableError,
} from '../../src/sandbox/docker/index.js';
import { describeIsolation } from './conformance.js';
import { dockerForTests, TEST_IMAGE } from './support.js';

const docker = await dockerForTests();
const describeDocker = docker ? describe : describe.skip;

/** Every container this file makes carries this label, so cleanup never touches anyone else's. */
const RUN_LABEL = { 'dev.frognano.test': `docker-test-${randomUUID()}` };

if (docker) {
  describeIsolation('docker', (ws, limits) =>
    DockerSandbox.create(ws, { image: TEST_IMAGE, cpus: 1, labels: RUN_LABEL, ...limits }, { docker }),
  );
}

async function containerGone(d: Docker, id: string): Promise<boolean> {
  try {
    await d.getContainer(id).inspect();
    return false;
  } catch (err) {
    return (err as { statusCode?: number }).statusCode === 404;
  }
}

describeDocker('DockerSandbox container', () => {
  const d = docker as Docker;
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'fn-docker-'));
  });
  afterEach(async () => {
    await reapStaleSandboxes(d, 0, { labels: RUN_LABEL });
    await rm(dir, { recursive: true, force: true });
  });

  it('is created with the isolation settings and labels, and removed by close()', async () => {
    // An awkward but legal workspace path: must not be mistaken for bind options.
    const ws = path.join(dir, 'odd:name,ro with space');
    await mkdir(ws);
    const sb = await DockerSandbox.create(
      ws,
      {
        image: TEST_IMAGE,
        memoryMb: 300,
        cpus: 1.5,
        pidsLimit: 77,
        labels: { ...RUN_LABEL, 'dev.frognano.job': 'job-1' },
      },
      { docker: d },
    );
    const info = await d.getContainer(sb.containerId).inspect();
    expect(info.State.Running).toBe(true);
    expect(info.HostConfig.NetworkMode).toBe('none');
    expect(info.HostConfig.ReadonlyRootfs).toBe(true);
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    // Only for the root exec wrapper (starts commands as the sandbox user, sweeps after them) and the workspace measurement.
    expect(info.HostConfig.CapAdd).toEqual(['KILL', 'SETUID', 'SETGID', 'DAC_READ_SEARCH']);
    expect(info.HostConfig.SecurityOpt).toEqual(['no-new-privileges']);
    expect(info.HostConfig.Memory).toBe(300 * 1024 * 1024);
    expect(info.HostConfig.MemorySwap).toBe(300 * 1024 * 1024);
    expect(info.HostConfig.NanoCpus).toBe(1.5e9);
    expect(info.HostConfig.PidsLimit).toBe(77);
    expect(info.Mounts).toEqual([
      expect.objectContaining({ Type: 'bind', Source: sb.hostDir, Destination: '/workspace', RW: true }),
    ]);
    expect(Object.keys(info.HostConfig.Tmpfs ?? {}).sort()).toEqual(['/home/agent', '/tmp']);
    // PID 1 and the exec wrapper run as root so that commands cannot signal them; commands never do.
    const who = await sb.exec('id -u; id -g; id -G; grep -E "^Cap(Prm|Eff|Amb)" /proc/self/status');
    expect(who.stdout).toMatch(/^(\d+)\n\1\n\1\nCapPrm:\s+0+\nCapEff:\s+0+\nCapAmb:\s+0+\n$/);
    expect(who.stdout).not.toMatch(/^0\n/);
    expect(info.Config.Labels[SANDBOX_LABEL]).toBe('1');
    expect(info.Config.Labels['dev.frognano.job']).toBe('job-1');
    expect(info.Config.Env.join('\n')).not.toMatch(/TOKEN|SECRET|KEY/i);
    expect((await sb.exec('echo w > w.txt')).exitCode).toBe(0);
    expect(await readFile(path.join(ws, 'w.txt'), 'utf8')).toBe('w\n');
    await sb.close();
    expect(await containerGone(d, sb.containerId)).toBe(true);
  });

  it('reaps the container of a runner that crashed mid-job', async () => {
    const tag = `crash-${randomUUID()}`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(import.meta.dirname, 'fixtures/crashing-runner.ts'), dir, TEST_IMAGE, tag],
      { env: { ...process.env }, timeout: 60_000 },
    ).catch((err: { stdout?: string; signal?: string }) => {
      // The fixture SIGKILLs itself after printing the id: that is the crash being simulated.
      if (err.signal === 'SIGKILL' && err.stdout) return { stdout: err.stdout };
      throw err;
    });
    const id = stdout.trim();
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect((await d.getContainer(id).inspect()).State.Running).toBe(true);
    // Young, but its runner is gone: reaped even with a day-long age limit.
    const removed = await reapStaleSandboxes(d, 24 * 3600 * 1000, { labels: { 'dev.frognano.test': tag } });
    expect(removed).toEqual([id]);
    expect(await containerGone(d, id)).toBe(true);
    // The workspace the crashed runner had handed to the sandbox user is given back.
    const st = await stat(dir);
    expect([st.uid, st.gid]).toEqual([process.getuid?.(), process.getgid?.()]);
  });

  it('reaps by age but leaves young containers of live runners alone', async () => {
    const sb = await DockerSandbox.create(dir, { image: TEST_IMAGE, labels: RUN_LABEL }, { docker: d });
    expect(await reapStaleSandboxes(d, 3600 * 1000, { labels: RUN_LABEL })).toEqual([]);
    expect(await reapStaleSandboxes(d, 0, { labels: RUN_LABEL })).toEqual([sb.containerId]);
    expect(await containerGone(d, sb.containerId)).toBe(true);
    await expect(sb.exec('true')).rejects.toThrow(/no longer running/);
    await sb.close(); // already gone: still fine
  });

  // A runner that is not root and has nothing but the engine (the docker group): the images and the documented
  // setup run it this way. Its own uid is the sandbox user; nothing is chowned.
  const itAsRoot = process.getuid?.() === 0 ? it : it.skip;
  itAsRoot('works for a non-root runner that only has access to the engine', async () => {
    const { stat: statFile, chown } = await import('node:fs/promises');
    const sock = await statFile('/var/run/docker.sock');
    await chown(dir, 1000, 1000);
    const tag = `nonroot-${randomUUID()}`;
    const { stdout } = await promisify(execFile)(
      'setpriv',
      [
        '--reuid=1000',
        '--regid=1000',
        `--groups=${sock.gid}`,
        process.execPath,
        '--import',
        'tsx',
        path.join(import.meta.dirname, 'fixtures/nonroot-docker.ts'),
        dir,
        TEST_IMAGE,
        tag,
      ],
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir }, timeout: 90_000 },
    );
    const seen = JSON.parse(stdout) as { id: string; idErr: string; survivors: string };
    expect(seen).toEqual({ id: '1000\n1000\nok\n', idErr: '', survivors: '0' });
    for (const f of ['made.txt', 'host/written.txt', 'host', '.']) {
      const st = await statFile(path.join(dir, f));
      expect([f, st.uid, st.gid]).toEqual([f, 1000, 1000]);
    }
    await reapStaleSandboxes(d, 0, { labels: { 'dev.frognano.test': tag } });
  });

  it('says how to build the image when it is missing', async () => {
    const err = await DockerSandbox.create(dir, { image: 'frognano-sandbox:no-such-tag' }, { docker: d }).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(SandboxUnavailableError);
    expect(err.message).toMatch(
      /^image frognano-sandbox:no-such-tag not found: build it with .*runner\/sandbox\.Dockerfile/,
    );
    expect(err.message).toContain('scripts/build-sandbox-image.sh frognano-sandbox:no-such-tag');
  });
});

describe('DockerSandbox without an engine', () => {
  it('says the engine is unreachable and what to do', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-docker-noengine-'));
    try {
      const err = await DockerSandbox.create(dir, {
        image: TEST_IMAGE,
        socketPath: path.join(dir, 'no-docker.sock'),
      }).catch((e) => e);
      expect(err).toBeInstanceOf(SandboxUnavailableError);
      expect(err.message).toMatch(/Docker engine not reachable at .*no-docker\.sock \(ENOENT\): start dockerd/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
