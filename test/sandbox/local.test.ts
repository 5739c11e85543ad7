import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalSandbox } from '../../src/sandbox/local.js';
import { expectFileReadGuards } from './conformance.js';

describe('LocalSandbox', () => {
  let dir: string;
  let sb: LocalSandbox;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'fn-local-'));
    sb = new LocalSandbox(dir);
  });
  afterEach(async () => {
    await sb.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs bash in the repository and reports exit codes and streams', async () => {
    const r = await sb.exec('pwd; echo err >&2; exit 3');
    expect(r.exitCode).toBe(3);
    expect(r.stdout.trim()).toBe(dir);
    expect(r.stderr.trim()).toBe('err');
    expect(r.timedOut).toBe(false);
  });

  it('kills the whole process group on timeout', async () => {
    const r = await sb.exec('sleep 30 & sleep 30', { timeoutMs: 300 });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBeNull();
    expect(r.durationMs).toBeLessThan(10_000);
  });

  it('caps output and counts what it dropped', async () => {
    const r = await sb.exec('head -c 5000 /dev/zero | tr "\\0" a', { maxOutputBytes: 1000 });
    expect(r.stdout.length).toBe(1000);
    expect(r.stdoutTruncated).toBe(4000);
  });

  it('does not pass host environment variables (secrets) to commands', async () => {
    process.env.FROGNANO_TEST_SECRET = 'ghs_shouldnotleak';
    try {
      const r = await sb.exec('echo "[$FROGNANO_TEST_SECRET]"');
      expect(r.stdout.trim()).toBe('[]');
    } finally {
      delete process.env.FROGNANO_TEST_SECRET;
    }
  });

  it('reads, writes and lists files, refusing escapes', async () => {
    await sb.writeFile('a/b/c.txt', 'hello');
    expect((await sb.readFile('a/b/c.txt')).toString()).toBe('hello');
    expect((await sb.readFile(`${dir}/a/b/c.txt`)).toString()).toBe('hello');
    await writeFile(path.join(dir, 'z.txt'), 'z');
    expect((await sb.listFiles()).files.map((f) => f.path)).toEqual(['a/b/c.txt', 'z.txt']);
    await expect(sb.readFile('../etc/passwd')).rejects.toThrow(/outside the repository/);
    await symlink('/etc', path.join(dir, 'etc-link'));
    await expect(sb.readFile('etc-link/passwd')).rejects.toThrow(/outside the repository/);
    await expect(sb.writeFile('etc-link/x', 'x')).rejects.toThrow(/outside the repository/);
    await expect(sb.readFile('missing.txt')).rejects.toThrow(/File not found/);
    await expect(sb.exec('pwd', { cwd: 'nope' })).rejects.toThrow(/Directory not found: nope/);
  });

  it('caps file reads, streams large files, and refuses FIFOs', async () => {
    await expectFileReadGuards(sb);
  });
});
