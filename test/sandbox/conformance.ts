/**
 * The isolation properties every isolating sandbox (docker, bwrap) must have, run against the real thing.
 * Each implementation's test file calls describeIsolation() with a factory.
 */
import { lstat, mkdtemp, readFile, rm, stat, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { FileTooLargeError, type Sandbox } from '../../src/sandbox/types.js';
import { hostPidsMatching, waitFor } from './support.js';

export interface IsolationLimits {
  memoryMb: number;
  pidsLimit: number;
  jobTimeoutMs?: number;
}

export type SandboxFactory = (workspace: string, limits: IsolationLimits) => Promise<Sandbox>;

const LIMITS: IsolationLimits = { memoryMb: 256, pidsLimit: 64 };

/** A number no other process on the machine uses as a sleep argument, to find ours in /proc. */
const marker = () => 3000 + (randomBytes(2).readUInt16BE() % 60000);

/**
 * readFile's size cap, openFileStream, and refusing what is not a regular file: every sandbox (local included) must
 * keep a huge file or a FIFO in the repository from exhausting or hanging the runner.
 */
export async function expectFileReadGuards(sb: Sandbox): Promise<void> {
  await sb.writeFile('sized/ten.txt', '0123456789');
  expect((await sb.readFile('sized/ten.txt', { maxBytes: 10 })).toString()).toBe('0123456789');
  const err = await sb.readFile('sized/ten.txt', { maxBytes: 9 }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(FileTooLargeError);
  expect(err).toMatchObject({ path: 'sized/ten.txt', size: 10, maxBytes: 9 });
  // Made by a command, as the model would: a 3 MiB file (several read chunks) and a FIFO.
  const made = await sb.exec('head -c 3145728 /dev/zero | tr "\\0" q > sized/big.txt && mkfifo sized/pipe');
  expect(made).toMatchObject({ exitCode: 0, stderr: '' });
  const big = await sb.readFile('sized/big.txt');
  expect(big.length).toBe(3 * 1024 * 1024);
  expect(big.every((b) => b === 0x71)).toBe(true);
  await expect(sb.readFile('sized/big.txt', { maxBytes: 3 * 1024 * 1024 - 1 })).rejects.toBeInstanceOf(FileTooLargeError);
  expect(sb.openFileStream).toBeDefined();
  let streamed = 0;
  for await (const chunk of await sb.openFileStream!('sized/big.txt')) streamed += (chunk as Buffer).length;
  expect(streamed).toBe(3 * 1024 * 1024);
  // Reading a FIFO would block until the tool timeout: refused at once.
  await expect(sb.readFile('sized/pipe')).rejects.toThrow(/^sized\/pipe is not a regular file$/);
  await expect(sb.openFileStream!('sized/pipe')).rejects.toThrow(/^sized\/pipe is not a regular file$/);
  await expect(sb.openFileStream!('sized')).rejects.toThrow(/sized is a directory/);
  await expect(sb.openFileStream!('sized/none.txt')).rejects.toThrow(/File not found: sized\/none.txt/);
  await expect(sb.openFileStream!('../../etc/passwd')).rejects.toThrow(/outside the repository/);
}

export function describeIsolation(name: string, factory: SandboxFactory): void {
  describe(`${name}: isolation`, () => {
    let dir: string;
    let sb: Sandbox;
    beforeAll(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), `fn-${name}-`));
      sb = await factory(dir, LIMITS);
    });
    afterAll(async () => {
      await sb?.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('runs commands in /workspace as a non-root user without capabilities', async () => {
      const r = await sb.exec('pwd; id -u; grep CapEff /proc/self/status');
      expect(r.exitCode).toBe(0);
      const [pwd, uid, caps] = r.stdout.trim().split('\n');
      expect(sb.workdir).toBe('/workspace');
      expect(pwd).toBe('/workspace');
      expect(Number(uid)).toBeGreaterThan(0);
      expect(caps).toMatch(/CapEff:\s+0+$/);
    });

    it('does not let commands create namespaces (no way to capabilities inside)', async () => {
      const r = await sb.exec('unshare -U true && echo userns-created; unshare -n true && echo netns-created; true');
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/unshare failed/);
    });

    it('has no network: only the loopback interface, and connecting out fails', async () => {
      const r = await sb.exec(
        `python3 -c "import socket; print([n for _, n in socket.if_nameindex()])
s = socket.socket(); s.settimeout(3)
try:
    s.connect(('1.1.1.1', 80)); print('CONNECTED')
except OSError as e:
    print('refused', e.errno)"`,
      );
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain("['lo']");
      expect(r.stdout).toMatch(/refused \d+/);
      expect(r.stdout).not.toContain('CONNECTED');
    });

    it('keeps the system read-only but /tmp and HOME writable', async () => {
      const r = await sb.exec(
        'touch /usr/frognano-x 2>/dev/null && echo usr-writable; touch /etc/frognano-x 2>/dev/null && echo etc-writable; ' +
          'echo t > /tmp/t && echo tmp-ok; echo h > "$HOME/h" && echo home-ok',
      );
      expect(r.stdout).not.toMatch(/usr-writable|etc-writable/);
      expect(r.stdout).toContain('tmp-ok');
      expect(r.stdout).toContain('home-ok');
    });

    it('shares the workspace with the host in both directions, with workable ownership', async () => {
      const r = await sb.exec('mkdir -p made/in && echo inside > made/in/sandbox.txt && git init -q && git status --short');
      expect(r.exitCode).toBe(0);
      expect(await readFile(path.join(dir, 'made/in/sandbox.txt'), 'utf8')).toBe('inside\n');
      await sb.writeFile('from/host.txt', 'host\n');
      const r2 = await sb.exec('echo more >> from/host.txt && mkdir from/sub && cat from/host.txt');
      expect(r2.stderr).toBe('');
      expect(r2.stdout).toBe('host\nmore\n');
      expect((await sb.readFile('from/host.txt')).toString()).toBe('host\nmore\n');
      expect((await sb.listFiles('from')).files.map((f) => f.path)).toEqual(['from/host.txt']);
    });

    it('lets git work in the workspace with a default identity', async () => {
      const r = await sb.exec(
        'mkdir -p repo && cd repo && git init -q && echo a > a.txt && git add -A && git commit -qm first && ' +
          'echo b >> a.txt && git diff --stat && git log --format="%an|%s" && git branch --show-current',
      );
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain('a.txt | 1 +');
      expect(r.stdout).toContain('FrogNano|first');
      expect(r.stdout.trim().split('\n').pop()).toBe('main');
    });

    it('does not let host environment variables (secrets) in', async () => {
      process.env.FROGNANO_TEST_SECRET = 'ghs_thisMustNotLeakIntoTheSandbox0001';
      try {
        const s2 = await factory(dir, LIMITS);
        try {
          const r = await s2.exec('env; cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n"');
          expect(r.stdout).not.toContain('ghs_thisMustNotLeak');
          expect(r.stdout).not.toContain('FROGNANO_TEST_SECRET');
          expect(r.stdout).toContain('HOME=');
        } finally {
          await s2.close();
        }
      } finally {
        delete process.env.FROGNANO_TEST_SECRET;
      }
    });

    it('kills the whole command tree on timeout and stays usable', async () => {
      const m = marker();
      const r = await sb.exec(`sleep ${m} & sleep ${m + 1}; echo never`, { timeoutMs: 700 });
      expect(r.timedOut).toBe(true);
      expect(r.exitCode).toBeNull();
      expect(r.stdout).not.toContain('never');
      expect(r.durationMs).toBeLessThan(10_000);
      expect(await waitFor(() => hostPidsMatching(`sleep ${m}`).length === 0)).toBe(true);
      const again = await sb.exec('echo alive');
      expect(again.stdout).toBe('alive\n');
      expect(again.exitCode).toBe(0);
    });

    it('still kills a timed-out command that wiped /tmp and HOME', async () => {
      const m = marker();
      const r = await sb.exec(`rm -rf /tmp/* /tmp/.[!.]* "$HOME"/* 2>/dev/null; sleep ${m}`, { timeoutMs: 1500 });
      expect(r.timedOut).toBe(true);
      expect(await waitFor(() => hostPidsMatching(`sleep ${m}`).length === 0)).toBe(true);
      expect((await sb.exec('echo next')).stdout).toBe('next\n');
    });

    it('kills what a finished command left running in the background', async () => {
      const m = marker();
      const r = await sb.exec(`(sleep ${m} &); echo started`);
      expect(r.stdout).toBe('started\n');
      expect(await waitFor(() => hostPidsMatching(`sleep ${m}`).length === 0)).toBe(true);
    });

    it('kills a daemon that left the command\'s session', async () => {
      const m = marker();
      const r = await sb.exec(`setsid sleep ${m} > /dev/null 2>&1 < /dev/null & echo started`);
      expect(r.stdout).toBe('started\n');
      expect(await waitFor(() => hostPidsMatching(`sleep ${m}`).length === 0)).toBe(true);
      expect((await sb.exec('echo next')).stdout).toBe('next\n');
    });

    it('cannot be stopped from inside', async () => {
      await sb.exec('kill -KILL -1; kill -KILL 1; pkill -KILL sleep; true');
      const r = await sb.exec('echo still here');
      expect(r.stdout).toBe('still here\n');
    });

    it('cancels a command through its AbortSignal', async () => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 300);
      const r = await sb.exec('sleep 20', { signal: ac.signal });
      expect(r.cancelled).toBe(true);
      expect(r.timedOut).toBe(false);
      expect(r.exitCode).toBeNull();
    });

    it('caps output and counts what it dropped', async () => {
      const r = await sb.exec('head -c 50000 /dev/zero | tr "\\0" a; echo err >&2', { maxOutputBytes: 1000 });
      expect(r.exitCode).toBe(0);
      expect(r.stdout.length).toBe(1000);
      expect(r.stdoutTruncated).toBe(49_000);
      expect(r.stderr).toBe('err\n');
    });

    it('passes stdin and reports exit codes and stderr', async () => {
      const r = await sb.exec('cat; echo oops >&2; exit 7', { stdin: 'line one\nline two\n' });
      expect(r.stdout).toBe('line one\nline two\n');
      expect(r.stderr).toBe('oops\n');
      expect(r.exitCode).toBe(7);
    });

    it('contains a fork bomb within the process limit', async () => {
      const r = await sb.exec('bomb() { bomb | bomb & }; bomb; sleep 2; echo contained', { timeoutMs: 30_000 });
      expect(r.stdout).toContain('contained');
      // The limit, not luck, stopped it: forks were refused.
      expect(r.stderr).toMatch(/fork: (retry: )?Resource temporarily unavailable/);
      const after = await sb.exec('echo usable');
      expect(after.stdout).toBe('usable\n');
    });

    it('stops a command that allocates more than the memory limit', async () => {
      const r = await sb.exec(`python3 -c "b = bytearray(${LIMITS.memoryMb * 2} * 1024 * 1024); print('allocated')"`);
      expect(r.stdout).not.toContain('allocated');
      expect(r.exitCode).not.toBe(0);
      const ok = await sb.exec(`python3 -c "b = bytearray(16 * 1024 * 1024); print('small ok')"`);
      expect(ok.stdout).toBe('small ok\n');
    });

    it('caps file reads, streams large files, and refuses FIFOs', async () => {
      await expectFileReadGuards(sb);
    });

    it('runs commands in a subdirectory and refuses paths outside the workspace', async () => {
      await sb.writeFile('pkg/mod.py', 'X = 1\n');
      const r = await sb.exec('pwd; ls', { cwd: 'pkg' });
      expect(r.stdout).toBe('/workspace/pkg\nmod.py\n');
      await expect(sb.exec('pwd', { cwd: '../' })).rejects.toThrow(/outside the repository/);
      await expect(sb.exec('pwd', { cwd: 'no/such/dir' })).rejects.toThrow(/Directory not found: no\/such\/dir/);
      await expect(sb.exec('pwd', { cwd: 'pkg/mod.py' })).rejects.toThrow(/pkg\/mod.py is not a directory/);
      await expect(sb.readFile('../../etc/passwd')).rejects.toThrow(/outside the repository/);
      await expect(sb.writeFile('/workspace/../escape.txt', 'x')).rejects.toThrow(/outside the repository/);
      await symlink('/etc', path.join(dir, 'etc-link'));
      await expect(sb.readFile('etc-link/hostname')).rejects.toThrow(/outside the repository/);
      await expect(sb.writeFile('etc-link/x', 'x')).rejects.toThrow(/outside the repository/);
      expect((await sb.readFile('/workspace/pkg/mod.py')).toString()).toBe('X = 1\n');
    });
  });

  describe(`${name}: lifecycle`, () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), `fn-${name}-life-`));
    });
    afterEach(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('gives the workspace back to its owner on close, and close is idempotent', async () => {
      const before = await stat(dir);
      const sb = await factory(dir, LIMITS);
      await sb.exec('echo x > made-inside.txt');
      await sb.writeFile('d/host.txt', 'h');
      await sb.close();
      await sb.close();
      for (const p of ['.', 'made-inside.txt', 'd', 'd/host.txt']) {
        const st = await lstat(path.join(dir, p));
        expect([p, st.uid, st.gid]).toEqual([p, before.uid, before.gid]);
      }
      await expect(sb.exec('true')).rejects.toThrow(/closed/);
    });

    it('stops everything when the job time limit is reached', async () => {
      const sb = await factory(dir, { ...LIMITS, jobTimeoutMs: 4000 });
      try {
        const r = await sb.exec('sleep 30', { timeoutMs: 60_000 });
        expect(r.exitCode).toBeNull();
        expect(r.timedOut).toBe(true);
        expect(r.durationMs).toBeLessThan(15_000);
        await new Promise((res) => setTimeout(res, 300));
        await expect(sb.exec('true')).rejects.toThrow(/job time limit of 4s/);
      } finally {
        await sb.close();
      }
    });

    it('refuses a workspace that does not exist', async () => {
      await expect(factory(path.join(dir, 'missing'), LIMITS)).rejects.toThrow(/is not a directory/);
    });
  });
}
