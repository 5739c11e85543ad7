import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { promisify } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import {
  BwrapSandbox,
  checkSandbox,
  createSandbox,
  DockerSandbox,
  LocalSandbox,
  resolveSandboxConfig,
  SandboxConfigSchema,
  sandboxConfigFromEnv,
  checkRunnerSandbox,
} from '../../src/sandbox/index.js';
import { dockerForTests, TEST_IMAGE } from './support.js';

const docker = await dockerForTests();
const itDocker = docker ? it : it.skip;

describe('sandboxConfigFromEnv', () => {
  it('defaults to auto with finite limits everywhere', () => {
    const cfg = sandboxConfigFromEnv({});
    expect(cfg.kind).toBe('auto');
    const docker = SandboxConfigSchema.parse({ kind: 'docker' });
    expect(docker).toMatchObject({
      kind: 'docker',
      image: 'frognano-sandbox:latest',
      memoryMb: 4096,
      cpus: 2,
      pidsLimit: 512,
      defaultTimeoutMs: 120_000,
      user: '1000:1000',
      labels: {},
    });
    expect(docker.kind === 'docker' && docker.jobTimeoutMs).toBeGreaterThan(0);
  });

  it('reads the docker settings', () => {
    const cfg = sandboxConfigFromEnv({
      FROGNANO_SANDBOX: 'Docker',
      FROGNANO_SANDBOX_IMAGE: 'acme/sandbox:py312',
      FROGNANO_SANDBOX_MEMORY_MB: '2048',
      FROGNANO_SANDBOX_CPUS: '1.5',
      FROGNANO_SANDBOX_PIDS: '256',
      FROGNANO_SANDBOX_TIMEOUT_MS: '30000',
      FROGNANO_SANDBOX_JOB_TIMEOUT_MS: '600000',
      FROGNANO_SANDBOX_USER: '2000:2000',
    });
    expect(cfg).toMatchObject({
      kind: 'docker',
      image: 'acme/sandbox:py312',
      memoryMb: 2048,
      cpus: 1.5,
      pidsLimit: 256,
      defaultTimeoutMs: 30_000,
      jobTimeoutMs: 600_000,
      user: '2000:2000',
    });
  });

  it('reads bwrap, local and auto', () => {
    expect(sandboxConfigFromEnv({ FROGNANO_SANDBOX: 'bwrap', FROGNANO_SANDBOX_BWRAP: '/opt/bwrap' })).toMatchObject({
      kind: 'bwrap',
      bwrapPath: '/opt/bwrap',
    });
    expect(sandboxConfigFromEnv({ FROGNANO_SANDBOX: 'local' })).toEqual({ kind: 'local', defaultTimeoutMs: 120_000 });
    expect(sandboxConfigFromEnv({ FROGNANO_SANDBOX: 'auto', FROGNANO_SANDBOX_IMAGE: 'x:y' })).toMatchObject({
      kind: 'auto',
      docker: { image: 'x:y' },
    });
  });

  it('rejects bad values naming the variable', () => {
    expect(() => sandboxConfigFromEnv({ FROGNANO_SANDBOX: 'chroot' })).toThrow(
      /FROGNANO_SANDBOX=chroot is not one of docker, bwrap, local, auto/,
    );
    expect(() => sandboxConfigFromEnv({ FROGNANO_SANDBOX: 'docker', FROGNANO_SANDBOX_MEMORY_MB: 'lots' })).toThrow(
      /FROGNANO_SANDBOX_MEMORY_MB=lots is not a number/,
    );
    expect(() => sandboxConfigFromEnv({ FROGNANO_SANDBOX: 'docker', FROGNANO_SANDBOX_MEMORY_MB: '8' })).toThrow(
      /memoryMb/,
    );
    expect(() => sandboxConfigFromEnv({ FROGNANO_SANDBOX: 'bwrap', FROGNANO_SANDBOX_USER: '0:0' })).toThrow(
      /never runs as root/,
    );
  });
});

describe('checkRunnerSandbox', () => {
  it('refuses the local sandbox for a runner unless explicitly allowed, and says why', () => {
    const local = sandboxConfigFromEnv({ FROGNANO_SANDBOX: 'local' });
    expect(() => checkRunnerSandbox(local, {})).toThrow(
      /FROGNANO_SANDBOX=local runs the model's commands on the runner with no isolation.*set FROGNANO_ALLOW_UNSAFE_LOCAL_SANDBOX=1/,
    );
    expect(() => checkRunnerSandbox(local, { FROGNANO_ALLOW_UNSAFE_LOCAL_SANDBOX: 'yes' })).toThrow(/no isolation/);
    expect(checkRunnerSandbox(local, { FROGNANO_ALLOW_UNSAFE_LOCAL_SANDBOX: '1' })).toMatch(/^UNSAFE: .*no isolation/);
    for (const kind of ['docker', 'bwrap', 'auto']) {
      expect(checkRunnerSandbox(sandboxConfigFromEnv({ FROGNANO_SANDBOX: kind }), {})).toBeUndefined();
    }
  });

  it('reads the bwrap cgroup settings', () => {
    expect(sandboxConfigFromEnv({ FROGNANO_SANDBOX: 'bwrap' })).toMatchObject({ cgroup: 'required' });
    expect(
      sandboxConfigFromEnv({
        FROGNANO_SANDBOX: 'bwrap',
        FROGNANO_SANDBOX_BWRAP_CGROUP: 'off',
        FROGNANO_SANDBOX_CGROUP_PARENT: '/x',
      }),
    ).toMatchObject({ cgroup: 'off', cgroupParent: '/x' });
    expect(() => sandboxConfigFromEnv({ FROGNANO_SANDBOX: 'bwrap', FROGNANO_SANDBOX_BWRAP_CGROUP: 'maybe' })).toThrow(
      /cgroup/,
    );
  });
});

describe('createSandbox and checkSandbox', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'fn-index-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates the local sandbox only when asked for it', async () => {
    const sb = await createSandbox({ kind: 'local' }, dir);
    expect(sb).toBeInstanceOf(LocalSandbox);
    await sb.close();
    const check = await checkSandbox({ kind: 'local' });
    expect(check.ok).toBe(true);
    expect(check.checks[0].hint).toMatch(/trusted/);
  });

  it('creates and checks bwrap', async () => {
    const sb = await createSandbox({ kind: 'bwrap' }, dir);
    try {
      expect(sb).toBeInstanceOf(BwrapSandbox);
      expect((await sb.exec('echo ok')).stdout).toBe('ok\n');
    } finally {
      await sb.close();
    }
    const check = await checkSandbox({ kind: 'bwrap' });
    expect(check).toMatchObject({ kind: 'bwrap', ok: true });
  });

  it('reports a missing bwrap with an install hint', async () => {
    const check = await checkSandbox({ kind: 'bwrap', bwrapPath: '/nonexistent/bwrap' });
    expect(check.ok).toBe(false);
    expect(check.checks[0].message).toMatch(/bubblewrap failed: .*nonexistent\/bwrap/);
    expect(check.checks[0].hint).toMatch(/apt-get install bubblewrap/);
  });

  itDocker('auto picks docker when the engine and image are there', async () => {
    const cfg = { kind: 'auto' as const, docker: { image: TEST_IMAGE } };
    expect((await resolveSandboxConfig(cfg)).kind).toBe('docker');
    expect(await checkSandbox(cfg)).toMatchObject({ kind: 'docker', ok: true });
    const sb = await createSandbox(cfg, dir);
    try {
      expect(sb).toBeInstanceOf(DockerSandbox);
      expect((await sb.exec('id -un')).stdout).toBe('agent\n');
    } finally {
      await sb.close();
    }
  });

  itDocker('doctor runs a real command in the image and explains an unusable one', async () => {
    expect(await checkSandbox({ kind: 'docker', image: TEST_IMAGE })).toMatchObject({
      ok: true,
      checks: [{ message: expect.stringContaining(`image ${TEST_IMAGE} runs sandboxed commands`) }],
    });
    // An image with a shell but no bash: present, yet useless as a sandbox.
    const tag = `frognano-test-nobash:${process.pid}`;
    const root = path.join(dir, 'rootfs');
    await mkdir(path.join(root, 'bin'), { recursive: true });
    await copyFile('/bin/busybox', path.join(root, 'bin/busybox'));
    for (const tool of ['sh', 'sleep', 'echo']) await symlink('busybox', path.join(root, 'bin', tool));
    await promisify(execFile)('bash', ['-c', `tar -C "${root}" -c . | docker import - ${tag}`]);
    try {
      const check = await checkSandbox({ kind: 'docker', image: tag });
      expect(check.ok).toBe(false);
      expect(check.checks[0].message).toMatch(new RegExp(`a sandbox from ${tag} cannot run commands`));
      expect(check.checks[0].hint).toMatch(/bash, python3, coreutils and util-linux/);
    } finally {
      await promisify(execFile)('docker', ['rmi', '-f', tag]);
    }
  });

  it('auto falls back to bwrap when the docker image is missing, never to local', async () => {
    const cfg = { kind: 'auto' as const, docker: { image: 'frognano-sandbox:absent' } };
    const check = await checkSandbox(cfg);
    expect(check.kind).toBe('bwrap');
    expect(check.ok).toBe(true);
    expect(check.checks[0]).toMatchObject({ kind: 'docker', ok: false });
    expect(check.checks[0].hint ?? check.checks[0].message).toMatch(
      /scripts\/build-sandbox-image\.sh frognano-sandbox:absent/,
    );
    const sb = await createSandbox(cfg, dir);
    try {
      expect(sb).toBeInstanceOf(BwrapSandbox);
    } finally {
      await sb.close();
    }
  });

  itDocker('says each reason and each hint once when neither is usable (image missing, no bwrap)', async () => {
    const image = `frognano-sandbox:absent-${process.pid}`;
    const cfg = { kind: 'auto' as const, docker: { image }, bwrap: { bwrapPath: '/nonexistent/bwrap' } };
    const err: Error = await createSandbox(cfg, dir).then(
      () => {
        throw new Error('expected no usable sandbox');
      },
      (e: Error) => e,
    );
    const count = (needle: string) => err.message.split(needle).length - 1;
    expect(err.message).toMatch(new RegExp(`no isolating sandbox is usable: Docker .*: image ${image} not found`));
    expect(count(`image ${image} not found`)).toBe(1);
    expect(count(`scripts/build-sandbox-image.sh ${image}`)).toBe(1);
    expect(count(`docker build -t ${image}`)).toBe(1);
    expect(count('/nonexistent/bwrap')).toBe(1);
    expect(count('apt-get install bubblewrap')).toBe(1);
    // doctor's view of the same failure: the reason on the message, the fix only on the hint.
    const check = await checkSandbox({ kind: 'docker', image });
    expect(check.checks[0].message).toMatch(new RegExp(`^Docker .*: image ${image} not found$`));
    expect(check.checks[0].hint).toMatch(/^build it with .*scripts\/build-sandbox-image\.sh/);
  });

  it('fails with both reasons when neither docker nor bwrap is usable', async () => {
    const cfg = {
      kind: 'auto' as const,
      docker: { image: TEST_IMAGE, socketPath: path.join(dir, 'none.sock') },
      bwrap: { bwrapPath: '/nonexistent/bwrap' },
    };
    await expect(createSandbox(cfg, dir)).rejects.toThrow(
      /no isolating sandbox is usable: Docker engine not reachable.*bubblewrap failed.*FROGNANO_SANDBOX=local only/,
    );
    const check = await checkSandbox(cfg);
    expect(check.ok).toBe(false);
    expect(check.checks.map((c) => c.kind)).toEqual(['docker', 'bwrap']);
    expect(check.checks[0].hint).toMatch(/start dockerd/);
  });
});
