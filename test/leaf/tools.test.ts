import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ReadStream } from 'node:fs';
import { LocalSandbox } from '../../src/sandbox/local.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import {
  BASH_MAX_CHARS,
  FILE_TOOL_MAX_BYTES,
  LEAF_TOOLS,
  READ_MAX_CHARS,
  ToolExecutor,
  ToolInfrastructureError,
  TOOL_NAMES,
} from '../../src/leaf/tools.js';
import { removeDir, tempDir, isolateHome } from './helpers.js';

isolateHome();

describe('Leaf tool specs', () => {
  it('declares exactly the five trained tools with their parameters', () => {
    expect(LEAF_TOOLS.map((t) => t.function.name)).toEqual([...TOOL_NAMES]);
    const params = Object.fromEntries(
      LEAF_TOOLS.map((t) => [t.function.name, { props: Object.keys(t.function.parameters.properties ?? {}), required: t.function.parameters.required }]),
    );
    expect(params).toEqual({
      Read: { props: ['file_path', 'offset', 'limit'], required: ['file_path'] },
      Write: { props: ['file_path', 'content'], required: ['file_path', 'content'] },
      Edit: { props: ['file_path', 'old_string', 'new_string', 'replace_all'], required: ['file_path', 'old_string', 'new_string'] },
      Glob: { props: ['pattern', 'path'], required: ['pattern'] },
      Bash: { props: ['command', 'description', 'timeout'], required: ['command'] },
    });
    for (const t of LEAF_TOOLS) expect(t.function.description.length).toBeGreaterThan(20);
  });
});

describe('ToolExecutor on a LocalSandbox', () => {
  let dir: string;
  let sb: LocalSandbox;
  let ex: ToolExecutor;
  const run = async (name: string, args: Record<string, unknown>) => ex.execute({ name, arguments: args });

  beforeEach(async () => {
    dir = await tempDir();
    sb = new LocalSandbox(dir);
    ex = new ToolExecutor(sb, { bashMaxTimeoutMs: 3_000 });
    await mkdir(path.join(dir, 'src/lib'), { recursive: true });
    await writeFile(path.join(dir, 'src/a.ts'), 'one\ntwo\nthree\nfour\n');
  });
  afterEach(async () => {
    await sb.close();
    await removeDir(dir);
  });

  describe('Read', () => {
    it('answers the repo-relative path, then numbered lines', async () => {
      const r = await run('Read', { file_path: 'src/a.ts' });
      expect(r).toMatchObject({ isError: false, output: 'src/a.ts\n1. one\n2. two\n3. three\n4. four' });
    });
    it('pages with offset and limit, also given as strings, and accepts `path` and absolute workdir paths', async () => {
      expect((await run('Read', { file_path: 'src/a.ts', offset: 2, limit: 2 })).output).toBe('src/a.ts\n2. two\n3. three');
      expect((await run('Read', { path: `${dir}/src/../src/a.ts`, offset: '4', limit: '10' })).output).toBe('src/a.ts\n4. four');
    });
    it('caps output at 20,000 chars with the truncation marker', async () => {
      await writeFile(path.join(dir, 'big.txt'), 'x'.repeat(100).concat('\n').repeat(500));
      const r = await run('Read', { file_path: 'big.txt' });
      const full = `big.txt\n${Array.from({ length: 500 }, (_, i) => `${i + 1}. ${'x'.repeat(100)}`).join('\n')}`;
      expect(r.output).toBe(`${full.slice(0, READ_MAX_CHARS)}\n[truncated ${full.length - READ_MAX_CHARS} chars]`);
    });
    it('reports missing files, escapes and binaries as errors the model can act on', async () => {
      expect(await run('Read', { file_path: 'nope.ts' })).toMatchObject({ isError: true, output: 'FileNotFoundError: File not found: nope.ts' });
      expect((await run('Read', { file_path: '../../etc/passwd' })).output).toMatch(/^PermissionError: path .* is outside the repository$/);
      await writeFile(path.join(dir, 'img.png'), Buffer.from([0x89, 0x50, 0x00, 0x01]));
      expect((await run('Read', { file_path: 'img.png' })).output).toMatch(/^ValueError: img.png looks like a binary file/);
      expect((await run('Read', { file_path: 'src' })).output).toBe('IsADirectoryError: src is a directory, not a file');
      expect((await run('Read', {})).output).toBe('ValueError: invalid arguments for Read: file_path is required');
    });
  });

  describe('Write', () => {
    it('creates parent directories and answers the byte count', async () => {
      const r = await run('Write', { file_path: 'new/deep/é.txt', content: 'héllo' });
      expect(r).toMatchObject({ isError: false, output: 'Wrote new/deep/é.txt (6 bytes).' });
      expect(await readFile(path.join(dir, 'new/deep/é.txt'), 'utf8')).toBe('héllo');
    });
    it('writes a JSON object the parser decoded back as JSON, and refuses missing content', async () => {
      expect((await run('Write', { file_path: 'p.json', content: { a: 1 } })).output).toBe('Wrote p.json (13 bytes).');
      expect(await readFile(path.join(dir, 'p.json'), 'utf8')).toBe('{\n  "a": 1\n}\n');
      expect((await run('Write', { file_path: 'x.txt' })).output).toBe('ValueError: invalid arguments for Write: content is required');
    });
  });

  describe('Edit', () => {
    it('replaces exactly one occurrence, literally', async () => {
      const r = await run('Edit', { file_path: 'src/a.ts', old_string: 'two\n', new_string: '$& 2 $1\n' });
      expect(r.output).toBe('Edited src/a.ts (1 replacement).');
      expect(await readFile(path.join(dir, 'src/a.ts'), 'utf8')).toBe('one\n$& 2 $1\nthree\nfour\n');
    });
    it('errors when not found or ambiguous, and replaces all when asked', async () => {
      await writeFile(path.join(dir, 'r.txt'), 'a a a');
      expect(await run('Edit', { file_path: 'r.txt', old_string: 'b', new_string: 'c' })).toMatchObject({
        isError: true,
        output: 'ValueError: old_string was not found',
      });
      expect((await run('Edit', { file_path: 'r.txt', old_string: 'a', new_string: 'c' })).output).toBe(
        'ValueError: old_string matched 3 times; set replace_all=true or use a more specific old_string',
      );
      expect((await run('Edit', { file_path: 'r.txt', old_string: 'a', new_string: 'c', replace_all: 'true' })).output).toBe(
        'Edited r.txt (3 replacements).',
      );
      expect(await readFile(path.join(dir, 'r.txt'), 'utf8')).toBe('c c c');
      expect((await run('Edit', { file_path: 'r.txt', old_string: '', new_string: 'x' })).output).toBe('ValueError: old_string must be non-empty');
      expect((await run('Edit', { file_path: 'r.txt', old_string: 'c', new_string: 'x', replace_all: 'maybe' })).output).toMatch(
        /^ValueError: invalid arguments for Edit: replace_all: /,
      );
    });
    it('refuses to rewrite a file that is not UTF-8', async () => {
      await writeFile(path.join(dir, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
      expect((await run('Edit', { file_path: 'latin1.txt', old_string: 'ca', new_string: 'co' })).output).toMatch(/is not UTF-8 text/);
    });
  });

  describe('Glob', () => {
    beforeEach(async () => {
      await writeFile(path.join(dir, 'root.ts'), '');
      await writeFile(path.join(dir, 'src/lib/b.ts'), '');
      await writeFile(path.join(dir, 'src/lib/c.js'), '');
      await mkdir(path.join(dir, '.hidden'));
      await writeFile(path.join(dir, '.hidden/h.ts'), '');
    });
    it('matches recursively with **, sorted, skipping dot directories', async () => {
      expect((await run('Glob', { pattern: '**/*.ts' })).output).toBe('root.ts\nsrc/a.ts\nsrc/lib/b.ts');
      expect((await run('Glob', { pattern: '*.ts' })).output).toBe('root.ts');
      expect((await run('Glob', { pattern: '.hidden/*.ts' })).output).toBe('.hidden/h.ts');
    });
    it('searches below `path` and answers repo-relative paths', async () => {
      expect((await run('Glob', { pattern: '**/*', path: 'src/lib' })).output).toBe('src/lib/b.ts\nsrc/lib/c.js');
      expect((await run('Glob', { pattern: `${dir}/src/*.ts` })).output).toBe('src/a.ts');
    });
    it('says when nothing matched and refuses patterns leaving the repository', async () => {
      expect((await run('Glob', { pattern: '**/*.py' })).output).toBe('No files matched.');
      expect((await run('Glob', { pattern: '../*' })).output).toMatch(/^ValueError: pattern must be relative/);
      expect((await run('Glob', { pattern: '*', path: 'missing' })).output).toBe('FileNotFoundError: Directory not found: missing');
    });
    it('caps the list at 1,000 files', async () => {
      await mkdir(path.join(dir, 'many'));
      await Promise.all(Array.from({ length: 1005 }, (_, i) => writeFile(path.join(dir, 'many', `f${String(i).padStart(4, '0')}.txt`), '')));
      const out = (await run('Glob', { pattern: 'many/*.txt' })).output.split('\n');
      expect(out).toHaveLength(1001);
      expect(out[999]).toBe('many/f0999.txt');
      expect(out[1000]).toBe('... 5 more files');
    });
  });

  describe('Bash', () => {
    it('runs bash in the repository and answers exit code, stdout and stderr', async () => {
      const r = await run('Bash', { command: 'pwd; echo oops >&2; exit 3', description: 'demo' });
      expect(r).toMatchObject({ isError: false, output: `Exit code: 3\nSTDOUT:\n${dir}\n\nSTDERR:\noops\n` });
      expect((await run('Bash', { command: 'ls src' })).output).toBe('Exit code: 0\nSTDOUT:\na.ts\nlib\n\nSTDERR:\n');
    });
    it('reads `timeout` as seconds (values over 1000 as milliseconds), clamped to the maximum', async () => {
      const started = Date.now();
      expect((await run('Bash', { command: 'echo started; sleep 20', timeout: 1 })).output).toBe('Timed out after 1.0s\nSTDOUT:\nstarted\n\nSTDERR:\n');
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(ex.bashTimeoutMs({ timeout: 1500 })).toBe(1500);
      expect(ex.bashTimeoutMs({ timeout: '2' as unknown as number })).toBe(2000);
      expect(ex.bashTimeoutMs({ timeout: 10_000_000 })).toBe(3000);
      expect(ex.bashTimeoutMs({})).toBe(3000); // the 120 s default, clamped to this executor's 3 s maximum
      expect(new ToolExecutor(sb).bashTimeoutMs({})).toBe(120_000);
      expect((await run('Bash', { command: 'sleep 20', timeout: '1500' })).output).toBe('Timed out after 1.5s\nSTDOUT:\n\nSTDERR:\n');
    });
    it('caps output at 30,000 chars, counting what the stream cap dropped too', async () => {
      const r = await run('Bash', { command: 'head -c 400000 /dev/zero | tr "\\0" a' });
      expect(r.output.startsWith('Exit code: 0\nSTDOUT:\naaa')).toBe(true);
      const m = /\n\[truncated (\d+) chars\]$/.exec(r.output);
      expect(m).not.toBeNull();
      expect(r.output.length).toBe(BASH_MAX_CHARS + m![0].length);
      // 'Exit code: 0\nSTDOUT:\n' (21) + 262,144 captured + '\nSTDERR:\n' (9), plus 137,856 bytes the stream cap dropped
      expect(Number(m![1])).toBe(21 + 400_000 + 9 - BASH_MAX_CHARS);
    });
    it('refuses an empty command', async () => {
      expect((await run('Bash', { command: '  ' })).output).toBe('ValueError: invalid arguments for Bash: command: must not be empty');
    });
    it('throws ToolInfrastructureError when the sandbox cannot run anything', async () => {
      const broken = await tempDir();
      const bsb = new LocalSandbox(broken);
      await rm(broken, { recursive: true });
      await expect(new ToolExecutor(bsb).execute({ name: 'Bash', arguments: { command: 'true' } })).rejects.toBeInstanceOf(ToolInfrastructureError);
    });
  });

  it('answers unknown tools with the list of real ones', async () => {
    expect(await run('Grep', { pattern: 'x' })).toMatchObject({
      isError: true,
      output: 'Unknown tool: Grep. Available tools: Read, Write, Edit, Glob, Bash.',
    });
  });

  it('keeps the executable bit when editing', async () => {
    await writeFile(path.join(dir, 'run.sh'), '#!/bin/sh\necho a\n');
    await chmod(path.join(dir, 'run.sh'), 0o755);
    await run('Edit', { file_path: 'run.sh', old_string: 'echo a', new_string: 'echo b' });
    expect((await run('Bash', { command: './run.sh' })).output).toBe('Exit code: 0\nSTDOUT:\nb\n\nSTDERR:\n');
  });
});

describe('Read and Edit of files too large to load whole', () => {
  let dir: string;
  let sb: LocalSandbox;
  beforeAll(async () => {
    dir = await tempDir();
    sb = new LocalSandbox(dir);
  });
  afterAll(async () => {
    await sb.close();
    await removeDir(dir);
  });

  /** The same tool call with the whole-file path (a cap above the file) and the streamed one (a cap below it). */
  const both = async (args: Record<string, unknown>, cap: number) => {
    const whole = await new ToolExecutor(sb).execute({ name: 'Read', arguments: args });
    const paged = await new ToolExecutor(sb, { maxFileBytes: cap }).execute({ name: 'Read', arguments: args });
    return { whole, paged };
  };

  it('refuses to load more than FILE_TOOL_MAX_BYTES: a 20 MiB file is paged, never read whole', async () => {
    expect(FILE_TOOL_MAX_BYTES).toBe(16 * 1024 * 1024);
    const line = `${'y'.repeat(99)}\n`; // 100 bytes a line
    await writeFile(path.join(dir, 'huge.log'), line.repeat((20 * 1024 * 1024) / 100));
    // The real sandbox, passed through, to see how much of the file Read took: nothing whole, one chunk streamed.
    const loaded: number[] = [];
    const streams: ReadStream[] = [];
    const watched: Sandbox = {
      kind: sb.kind,
      workdir: sb.workdir,
      exec: (c, o) => sb.exec(c, o),
      spawn: (a, o) => sb.spawn(a, o),
      readFile: async (p, o) => {
        const buf = await sb.readFile(p, o);
        loaded.push(buf.length);
        return buf;
      },
      writeFile: (p, d) => sb.writeFile(p, d),
      listFiles: (d, l) => sb.listFiles(d, l),
      openFileStream: async (p) => {
        const s = (await sb.openFileStream(p)) as ReadStream;
        streams.push(s);
        return s;
      },
      close: async () => {},
    };
    const ex = new ToolExecutor(watched);
    const r = await ex.execute({ name: 'Read', arguments: { file_path: 'huge.log', offset: 3, limit: 2 } });
    expect(r).toMatchObject({ isError: false, output: `huge.log\n3. ${'y'.repeat(99)}\n4. ${'y'.repeat(99)}` });
    expect(loaded).toEqual([]);
    expect(streams).toHaveLength(1);
    expect(streams[0].bytesRead).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(streams[0].destroyed).toBe(true);
    const whole = await ex.execute({ name: 'Read', arguments: { file_path: 'huge.log' } });
    expect(whole.isError).toBe(true);
    expect(whole.output).toBe(
      'ValueError: huge.log is 20 MiB, too large to Read whole (limit 16 MiB); pass offset and limit to read part of it, ' +
        "or use Bash instead, e.g. `sed -n '1,200p' huge.log`, head, tail or grep -n",
    );
    const edit = await ex.execute({ name: 'Edit', arguments: { file_path: 'huge.log', old_string: 'y', new_string: 'z' } });
    expect(edit).toMatchObject({
      isError: true,
      output: 'ValueError: huge.log is 20 MiB, too large to Edit (limit 16 MiB); change it with Bash instead (e.g. sed -i, or a short script)',
    });
  });

  it('pages a large file exactly as Read shows a small one: line breaks, numbering, truncation marker', async () => {
    const text = 'α\r\nβ\rγ\n\n' + 'w'.repeat(30_000) + '\nlast \u00e9 line\r\n';
    await writeFile(path.join(dir, 'mixed.txt'), text);
    for (const args of [
      { offset: 1, limit: 3 },
      { offset: 2, limit: 10 },
      { offset: 4, limit: 1 },
      { offset: 5, limit: 2 }, // the 30,000-char line: cut at 20,000 chars with the exact count
      { offset: 6, limit: 5 },
      { offset: 50, limit: 5 }, // past the end: the path line only, as for a small file
    ]) {
      const { whole, paged } = await both({ file_path: 'mixed.txt', ...args }, 16);
      expect(paged).toMatchObject({ isError: false, output: whole.output });
    }
    expect((await both({ file_path: 'mixed.txt', offset: 5, limit: 1 }, 16)).paged.output).toMatch(/\n\[truncated 10\d{3} chars\]$/);
  });

  it('says binary, or sends the model to Bash, when paging cannot answer', async () => {
    await writeFile(path.join(dir, 'blob.bin'), Buffer.concat([Buffer.from('abc\n'), Buffer.alloc(100)]));
    const { whole, paged } = await both({ file_path: 'blob.bin', offset: 1, limit: 1 }, 16);
    expect(paged.output).toBe(whole.output);
    expect(paged.output).toMatch(/^ValueError: blob.bin looks like a binary file \(104 bytes\)/);

    await writeFile(path.join(dir, 'long lines.txt'), `${'z'.repeat(5000)}\n`.repeat(10));
    const far = await new ToolExecutor(sb, { maxFileBytes: 1000, readScanMaxBytes: 20_000 }).execute({
      name: 'Read',
      arguments: { file_path: 'long lines.txt', offset: 8, limit: 1 },
    });
    expect(far).toMatchObject({ isError: true });
    expect(far.output).toBe(
      'ValueError: long lines.txt is 49 KiB; lines 8-8 are not within its first 20 KiB, too far for Read to page to; ' +
        "use Bash instead, e.g. `sed -n '8,207p' 'long lines.txt'`, head, tail or grep -n",
    );
  });
});
