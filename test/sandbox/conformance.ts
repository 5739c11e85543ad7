/**
 * The isolation properties every isolating sandbox (docker, bwrap) must have, run against the real thing.
 * Each implementation's test file calls describeIsolation() with a factory.
 */
import { access, lstat, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ToolExecutor, type ToolOutcome } from '../../src/leaf/tools.js';
import type { Sandbox } from '../../src/sandbox/types.js';
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

/** One Leaf tool call, as the model makes it: the only way files are read and written for the model. */
export function toolCall(sb: Sandbox, name: string, args: Record<string, unknown>): Promise<ToolOutcome> {
  return new ToolExecutor(sb).execute({ name, arguments: args });
}

/**
 * Bounded file reads and refusing what is not a regular file: every sandbox (local included) must keep a huge file
 * or a FIFO in the repository from exhausting or hanging the runner. Reads go through the Read tool (its helper
 * runs inside the sandbox and caps what it prints) and through exec (maxOutputBytes caps what the host keeps).
 */
export async function expectFileReadGuards(sb: Sandbox): Promise<void> {
  expect(await toolCall(sb, 'Write', { file_path: 'sized/ten.txt', content: '0123456789' })).toMatchObject({ isError: false });
  expect((await toolCall(sb, 'Read', { file_path: 'sized/ten.txt' })).output).toBe('sized/ten.txt\n1. 0123456789');
  // Made by a command, as the model would: a 3 MiB file (several read chunks) and a FIFO.
  const made = await sb.exec('head -c 3145728 /dev/zero | tr "\\0" q > sized/big.txt && mkfifo sized/pipe');
  expect(made).toMatchObject({ exitCode: 0, stderr: '' });
  const whole = await sb.exec('cat sized/big.txt', { maxOutputBytes: 10 });
  expect(whole).toMatchObject({ exitCode: 0, stdout: 'qqqqqqqqqq', stdoutTruncated: 3 * 1024 * 1024 - 10 });
  const streamed = await sb.exec('wc -c < sized/big.txt; tr -d q < sized/big.txt | wc -c');
  expect(streamed.stdout).toBe(`${3 * 1024 * 1024}\n0\n`);
  // The Read tool answers a huge file with a bounded observation, never the whole file.
  const big = await toolCall(sb, 'Read', { file_path: 'sized/big.txt' });
  expect(big.isError).toBe(false);
  expect(big.output.startsWith('sized/big.txt\n1. qqqq')).toBe(true);
  expect(big.output.length).toBeLessThan(64 * 1024);
  // Reading a FIFO would block until the tool timeout: refused at once.
  const started = Date.now();
  expect(await toolCall(sb, 'Read', { file_path: 'sized/pipe' })).toMatchObject({
    output: 'ValueError: sized/pipe is not a regular file',
    isError: true,
  });
  expect(Date.now() - started).toBeLessThan(10_000);
  expect((await toolCall(sb, 'Read', { file_path: 'sized' })).output).toMatch(/^IsADirectoryError: .*Is a directory/);
  expect((await toolCall(sb, 'Read', { file_path: 'sized/none.txt' })).output).toMatch(
    /^FileNotFoundError: .*No such file or directory: '.*sized\/none.txt'$/,
  );
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
      expect(await toolCall(sb, 'Write', { file_path: 'from/host.txt', content: 'host\n' })).toMatchObject({ isError: false });
      const r2 = await sb.exec('echo more >> from/host.txt && mkdir from/sub && cat from/host.txt');
      expect(r2.stderr).toBe('');
      expect(r2.stdout).toBe('host\nmore\n');
      expect(await readFile(path.join(dir, 'from/host.txt'), 'utf8')).toBe('host\nmore\n');
      expect((await toolCall(sb, 'Read', { file_path: 'from/host.txt' })).output).toBe('from/host.txt\n1. host\n2. more');
      expect((await toolCall(sb, 'Glob', { pattern: '**/*', path: 'from' })).output).toBe('from/host.txt');
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
      expect(await toolCall(sb, 'Write', { file_path: 'pkg/mod.py', content: 'X = 1\n' })).toMatchObject({ isError: false });
      const r = await sb.exec('cd pkg && pwd && ls');
      expect(r.stdout).toBe('/workspace/pkg\nmod.py\n');
      // Host canaries beside the workspace: a file, and a directory a symlink in the workspace points to.
      const canary = `${dir}-canary`;
      const secret = `CANARY-${randomBytes(8).toString('hex')}`;
      await mkdir(canary, { recursive: true });
      await writeFile(path.join(canary, 'secret.txt'), `${secret}\n`);
      await symlink('/etc', path.join(dir, 'etc-link'));
      await symlink(canary, path.join(dir, 'canary-link'));
      try {
        const reads = [
          await toolCall(sb, 'Read', { file_path: `../${path.basename(canary)}/secret.txt` }),
          await toolCall(sb, 'Read', { file_path: `/workspace/../${path.basename(canary)}/secret.txt` }),
          await toolCall(sb, 'Read', { file_path: 'canary-link/secret.txt' }),
          await toolCall(sb, 'Glob', { pattern: '**/*', path: 'canary-link' }),
          await toolCall(sb, 'Bash', { command: `cat canary-link/secret.txt ../${path.basename(canary)}/secret.txt` }),
        ];
        for (const o of reads) expect(o.output).not.toContain(secret);
        // The read-only system refuses the first two; the third may land in the sandbox's own /tmp, never the host's.
        expect(await toolCall(sb, 'Write', { file_path: '/workspace/../escape.txt', content: 'x' })).toMatchObject({ isError: true });
        expect(await toolCall(sb, 'Write', { file_path: 'etc-link/frognano-x', content: 'x' })).toMatchObject({ isError: true });
        await toolCall(sb, 'Write', { file_path: 'canary-link/x.txt', content: 'x' });
        for (const p of [path.join(path.dirname(dir), 'escape.txt'), '/etc/frognano-x', path.join(canary, 'x.txt')]) {
          await expect(access(p)).rejects.toThrow(/ENOENT/);
        }
        expect(await readFile(path.join(canary, 'secret.txt'), 'utf8')).toBe(`${secret}\n`);
        expect((await toolCall(sb, 'Read', { file_path: '/workspace/pkg/mod.py' })).output).toBe('pkg/mod.py\n1. X = 1');
      } finally {
        await rm(canary, { recursive: true, force: true });
      }
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
      expect(await toolCall(sb, 'Write', { file_path: 'd/host.txt', content: 'h' })).toMatchObject({ isError: false });
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
