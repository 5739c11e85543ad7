import { mkdir, symlink, writeFile, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { runnerTimeoutSeconds, pyFloat, pyRepr } from '../../src/leaf/sandboxTool.js';
import {
  LEAF_TOOLS,
  ToolAbortedError,
  ToolExecutor,
  ToolInfrastructureError,
  TOOL_NAMES,
} from '../../src/leaf/tools.js';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { LocalSandbox } from '../../src/sandbox/local.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { isolateHome, removeDir, tempDir } from './helpers.js';

isolateHome();

describe('Leaf tool specs', () => {
  it('declares the five trained tools in upstream order', () => {
    expect(LEAF_TOOLS.map((t) => t.function.name)).toEqual([...TOOL_NAMES]);
  });
});

describe('runnerTimeoutSeconds (upstream environment.py _timeout)', () => {
  it.each([
    ['Read', {}, 120],
    ['Bash', {}, 180],
    ['Bash', { timeout: 1 }, 61],
    ['Bash', { timeout: 0.01 }, 60],
    ['Bash', { timeout: 1500 }, 61],
    ['Bash', { timeout: '30' }, 90],
    ['Bash', { timeout_ms: 2500, timeout: 999 }, 62],
    ['Bash', { timeout: true }, 61],
    ['Bash', { timeout: 'nan' }, 60],
    ['Bash', { timeout: ' 1_0 ' }, 70],
  ] as const)('%s %j -> %i s', (tool, args, want) => {
    expect(runnerTimeoutSeconds(tool, args as Record<string, unknown>)).toBe(want);
  });

  it("raises Python's errors where upstream's harness does", () => {
    expect(() => runnerTimeoutSeconds('Bash', { timeout: 'abc' })).toThrow("could not convert string to float: 'abc'");
    expect(() => runnerTimeoutSeconds('Bash', { timeout: [1] })).toThrow(
      "float() argument must be a string or a real number, not 'list'",
    );
    expect(() => runnerTimeoutSeconds('Bash', { timeout: 'inf' })).toThrow('cannot convert float infinity to integer');
    expect(pyFloat('1e3')).toBe(1000);
    expect(() => pyFloat('0x10')).toThrow();
    expect(pyRepr("it's")).toBe('"it\'s"');
    expect(pyRepr('a\nb\\')).toBe("'a\\nb\\\\'");
  });
});

/** A sandbox whose host-side file methods fail loudly: the tools must never need them. */
function withoutHostFiles(sandbox: Sandbox): Sandbox {
  const refuse = () => {
    throw new Error('host file access');
  };
  return Object.assign(Object.create(sandbox) as Sandbox, {
    readFile: refuse,
    writeFile: refuse,
    listFiles: refuse,
    openFileStream: refuse,
  });
}

describe('ToolExecutor runs every tool inside the sandbox', () => {
  let dir: string;
  let outside: string;
  let sandbox: BwrapSandbox;
  beforeAll(async () => {
    dir = await tempDir('fn-leaf-tools-');
    outside = await tempDir('fn-leaf-outside-');
    await writeFile(path.join(outside, 'secret.txt'), 'host secret\n');
    sandbox = await BwrapSandbox.create(dir);
  });
  afterAll(async () => {
    await sandbox.close();
    await removeDir(dir);
    await removeDir(outside);
  });

  it('never uses the host file methods, and a symlink to a host file names the sandbox view', async () => {
    await symlink(path.join(outside, 'secret.txt'), path.join(dir, 'link.txt'));
    await symlink(path.join(outside, 'created.txt'), path.join(dir, 'dangling.txt'));
    const ex = new ToolExecutor(withoutHostFiles(sandbox));
    const read = await ex.execute({ name: 'Read', arguments: { file_path: 'link.txt' } });
    expect(read.output).toBe(`FileNotFoundError: [Errno 2] No such file or directory: '/workspace/link.txt'`);
    expect(read.isError).toBe(true);
    const write = await ex.execute({ name: 'Write', arguments: { file_path: 'dangling.txt', content: 'pwned' } });
    expect(write.output).toMatch(/^(FileNotFoundError|PermissionError|OSError)/);
    await expect(readFile(path.join(outside, 'created.txt'))).rejects.toThrow();
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('host secret\n');
    const glob = await ex.execute({ name: 'Glob', arguments: { pattern: '*', path: outside } });
    expect(glob.output).toBe('No files matched.');
    await rm(path.join(dir, 'link.txt'));
    await rm(path.join(dir, 'dangling.txt'));
  });

  it("passes the runner's failure on in upstream's words", async () => {
    // The runner itself killed (as the memory limit would): upstream's line with the shell's exit code.
    const ex = new ToolExecutor(sandbox);
    const killed = await ex.execute({ name: 'Bash', arguments: { command: 'kill -9 $PPID' } });
    expect(killed.output).toBe('Tool runner exited with code 137.\n');
    expect(killed.isError).toBe(true);
  });

  it('runs the standard library even when the repository has files named like its modules', async () => {
    for (const name of ['json.py', 'glob.py', 'subprocess.py', 'pathlib.py'])
      await writeFile(path.join(dir, name), 'raise SystemExit(99)\n');
    await writeFile(path.join(dir, 'a.txt'), 'x\n');
    try {
      const r = await new ToolExecutor(sandbox).execute({ name: 'Read', arguments: { file_path: 'a.txt' } });
      expect(r.output).toBe('a.txt\n1. x');
    } finally {
      for (const name of ['json.py', 'glob.py', 'subprocess.py', 'pathlib.py', 'a.txt']) await rm(path.join(dir, name));
    }
  });

  it('ends the run (tool_error) on a Bash timeout that is not a number, as upstream does', async () => {
    const ex = new ToolExecutor(sandbox);
    await expect(ex.execute({ name: 'Bash', arguments: { command: 'true', timeout: 'soon' } })).rejects.toThrow(
      new ToolInfrastructureError("ValueError: could not convert string to float: 'soon'"),
    );
  });

  it('refuses a request too large to send, with a clear tool error', async () => {
    const ex = new ToolExecutor(sandbox, { maxRequestBytes: 1000 });
    const r = await ex.execute({ name: 'Write', arguments: { file_path: 'big.txt', content: 'x'.repeat(2000) } });
    expect(r.output).toMatch(
      /^ValueError: the Write call is \d+ bytes, more than the 1000 bytes one tool call may carry/,
    );
    expect(r.isError).toBe(true);
  });

  it('caps what it reads back from the sandbox', async () => {
    const ex = new ToolExecutor(sandbox, { maxOutputBytes: 100, runnerEnv: { LEAF_BASH_OUTPUT_CHARS: '0' } });
    const r = await ex.execute({ name: 'Bash', arguments: { command: 'seq 1 1000' } });
    expect(r.output.length).toBeLessThan(200);
    expect(r.output).toMatch(/\n\[\d+ more bytes of output were dropped\]$/);
  });

  it('stops a running call on abort', async () => {
    const ex = new ToolExecutor(sandbox);
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 300);
    await expect(ex.execute({ name: 'Bash', arguments: { command: 'sleep 30' } }, ac.signal)).rejects.toBeInstanceOf(
      ToolAbortedError,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe('ToolExecutor on the local sandbox', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('fn-leaf-local-');
    await mkdir(path.join(dir, 'src'));
  });
  afterAll(async () => removeDir(dir));

  it('keeps the executable bit when editing', async () => {
    await writeFile(path.join(dir, 'run.sh'), '#!/bin/sh\necho a\n', { mode: 0o755 });
    const ex = new ToolExecutor(new LocalSandbox(dir));
    expect(
      (
        await ex.execute({
          name: 'Edit',
          arguments: { file_path: 'run.sh', old_string: 'echo a', new_string: 'echo b' },
        })
      ).output,
    ).toBe('Edited run.sh (1 replacement).');
    expect((await ex.execute({ name: 'Bash', arguments: { command: './run.sh' } })).output).toBe(
      'Exit code: 0\nSTDOUT:\nb\n\nSTDERR:\n',
    );
  });
});
