import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalSandbox } from '../../src/sandbox/local.js';
import { expectFileReadGuards, toolCall } from './conformance.js';

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

  it('reads, writes and lists files through the Leaf tools, in the repository', async () => {
    // No isolation here (see LocalSandbox): paths resolve on the host, so there is no escape to refuse.
    expect(await toolCall(sb, 'Write', { file_path: 'a/b/c.txt', content: 'hello' })).toMatchObject({ isError: false });
    expect(await readFile(path.join(dir, 'a/b/c.txt'), 'utf8')).toBe('hello');
    expect((await toolCall(sb, 'Read', { file_path: 'a/b/c.txt' })).output).toBe('a/b/c.txt\n1. hello');
    expect((await toolCall(sb, 'Read', { file_path: `${dir}/a/b/c.txt` })).output).toBe('a/b/c.txt\n1. hello');
    await writeFile(path.join(dir, 'z.txt'), 'z');
    expect((await toolCall(sb, 'Glob', { pattern: '**/*.txt' })).output).toBe('a/b/c.txt\nz.txt');
    expect((await toolCall(sb, 'Read', { file_path: 'missing.txt' })).output).toMatch(
      /^FileNotFoundError: .*missing.txt/,
    );
    expect((await sb.exec('pwd')).stdout).toBe(`${dir}\n`);
  });

  it('caps file reads, streams large files, and refuses FIFOs', async () => {
    await expectFileReadGuards(sb);
  });
});
