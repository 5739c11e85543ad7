import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { ReplayBackend, type ReplayTurn } from '../../src/inference/replay.js';
import type { LeafEvent } from '../../src/leaf/events.js';
import { solve } from '../../src/leaf/solve.js';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { LocalSandbox } from '../../src/sandbox/local.js';
import { git, isolateHome, makeRepo, removeDir, SAMPLE_FILES, tempDir } from './helpers.js';

isolateHome();

const task = { title: 'add() subtracts', body: 'add(2, 3) should be 5.', repo: 'acme/calc', issueNumber: 7 };

const fixTurns: ReplayTurn[] = [
  {
    content: '',
    tool_calls: [
      { name: 'Read', arguments: { file_path: 'src/math.js' } },
      { name: 'Bash', arguments: { command: 'ls node_modules && cat .setup-log' } },
    ],
  },
  {
    content: '',
    tool_calls: [
      { name: 'Edit', arguments: { file_path: 'src/math.js', old_string: 'a - b', new_string: 'a + b' } },
      { name: 'Write', arguments: { file_path: 'docs/notes.md', content: 'add() adds.\n' } },
      { name: 'Bash', arguments: { command: "printf '\\000\\001\\002' > fixture.bin && rm README.md" } },
    ],
  },
  { content: 'add() now adds; see docs/notes.md.' },
];

describe('solve', () => {
  let source: string;
  let out: string;
  beforeEach(async () => {
    source = await makeRepo({ ...SAMPLE_FILES, '.gitignore': 'node_modules/\n.setup-log\n' });
    out = await tempDir('fn-leaf-out-');
  });
  afterEach(async () => {
    await removeDir(source);
    await removeDir(out);
  });

  it('copies the repo, runs setup, the model and the tests in the sandbox, and returns a patch that applies', async () => {
    const workspaces: string[] = [];
    const events: LeafEvent[] = [];
    const result = await solve({
      sourceDir: source,
      sandboxFactory: async (dir) => {
        workspaces.push(dir);
        return new LocalSandbox(dir);
      },
      backend: ReplayBackend.fromTurns(fixTurns),
      task,
      setupCommands: [
        'mkdir -p node_modules && echo dep > node_modules/dep.js && echo setup ran > .setup-log',
        'echo broken dependency >&2; exit 4',
      ],
      testCommands: ['sh test/math.test.sh && echo math ok', 'touch junit.xml; echo 1 failed >&2; exit 2', 'sleep 20'],
      limits: { testTimeoutMs: 1_000 },
      outDir: out,
      onEvent: (e) => events.push(e),
    });

    expect(result.trajectory.exit_reason).toBe('agent');
    expect(result.baseCommit).toBe(git(source, 'rev-parse', 'HEAD').trim());
    // Setup ran in the sandbox before the model; its failure was told to the model.
    expect(result.setupResults.map((r) => r.exitCode)).toEqual([0, 4]);
    expect(result.trajectory.steps[0].observations[1].observation).toBe(
      'Exit code: 0\nSTDOUT:\ndep.js\nsetup ran\n\nSTDERR:\n',
    );
    expect(result.trajectory.messages[1].content).toContain(
      'Note: the setup command `echo broken dependency >&2; exit 4` failed with exit code 4. Last output:\nbroken dependency',
    );

    // The patch: edit, new text file, new binary file, deletion; nothing ignored, nothing the tests made.
    expect(result.changedFiles).toEqual([
      { path: 'README.md', additions: 0, deletions: 1, binary: false },
      { path: 'docs/notes.md', additions: 1, deletions: 0, binary: false },
      { path: 'fixture.bin', additions: 0, deletions: 0, binary: true },
      { path: 'src/math.js', additions: 1, deletions: 1, binary: false },
    ]);
    expect(result.patch).toContain('GIT binary patch');
    expect(result.patch).not.toMatch(/node_modules|setup-log|junit\.xml/);
    expect(result.trajectory.output_patch).toBe(result.patch);

    // Tests ran after the model, results captured, the slow one timed out.
    expect(result.testResults).toEqual([
      expect.objectContaining({
        command: 'sh test/math.test.sh && echo math ok',
        exitCode: 0,
        timedOut: false,
        outputTail: 'math ok\n',
      }),
      expect.objectContaining({ exitCode: 2, timedOut: false, outputTail: '1 failed\n' }),
      expect.objectContaining({ command: 'sleep 20', exitCode: null, timedOut: true }),
    ]);

    // The patch applies to a fresh clone of the source and gives the model's result.
    const clone = await tempDir();
    try {
      git(clone, 'clone', '-q', source, 'c');
      const c = path.join(clone, 'c');
      git(c, 'apply', '--index', result.patchPath!);
      expect(await readFile(path.join(c, 'src/math.js'), 'utf8')).toContain('return a + b;');
      expect(await readFile(path.join(c, 'fixture.bin'))).toEqual(Buffer.from([0, 1, 2]));
      await expect(stat(path.join(c, 'README.md'))).rejects.toThrow();
    } finally {
      await removeDir(clone);
    }

    // Artefacts written; the source untouched; the workspace gone.
    expect(await readFile(result.patchPath!, 'utf8')).toBe(result.patch);
    expect(JSON.parse(await readFile(result.trajectoryJsonPath!, 'utf8'))).toMatchObject({
      exit_reason: 'agent',
      n_steps: 3,
    });
    expect(await readFile(result.trajectoryMarkdownPath!, 'utf8')).toContain('### FrogNano trajectory');
    expect(git(source, 'status', '--porcelain')).toBe('');
    expect(workspaces).toHaveLength(1);
    expect(workspaces[0].startsWith(source)).toBe(false);
    await expect(stat(path.dirname(workspaces[0]))).rejects.toThrow();
    expect(
      events.filter((e) => e.type === 'command_end').map((e) => e.type === 'command_end' && [e.phase, e.exitCode]),
    ).toEqual([
      ['setup', 0],
      ['setup', 4],
      ['test', 0],
      ['test', 2],
      ['test', null],
    ]);
    expect(events.findIndex((e) => e.type === 'finished')).toBeLessThan(
      events.findIndex((e) => e.type === 'command_start' && e.phase === 'test'),
    );
  });

  it('replays its own trajectory.json to the same patch', async () => {
    const first = await solve({
      sourceDir: source,
      sandboxFactory: async (dir) => new LocalSandbox(dir),
      backend: ReplayBackend.fromTurns(fixTurns),
      task,
      outDir: out,
    });
    const replayed = await solve({
      sourceDir: source,
      sandboxFactory: async (dir) => new LocalSandbox(dir),
      backend: await ReplayBackend.fromFile(first.trajectoryJsonPath!),
      task,
    });
    expect(replayed.trajectory.exit_reason).toBe('agent');
    expect(replayed.patch).toBe(first.patch);
    expect(replayed.patch).toContain('+  return a + b;');
    expect(replayed.trajectoryJsonPath).toBeUndefined();
  });

  it('returns no patch and runs no tests when cancelled, and still cleans up', async () => {
    const ac = new AbortController();
    const workspaces: string[] = [];
    const result = await solve({
      sourceDir: source,
      sandboxFactory: async (dir) => {
        workspaces.push(dir);
        return new LocalSandbox(dir);
      },
      backend: ReplayBackend.fromTurns([fixTurns[1], { content: 'slow', delay_ms: 30_000 }]),
      task,
      testCommands: ['echo should not run'],
      signal: ac.signal,
      onEvent: (e) => {
        if (e.type === 'turn_start' && e.turn === 2) ac.abort();
      },
    });
    expect(result.trajectory.exit_reason).toBe('cancelled');
    expect(result.patch).toBe('');
    expect(result.testResults).toEqual([]);
    await expect(stat(path.dirname(workspaces[0]))).rejects.toThrow();
  });

  it('fails clearly, leaving nothing behind, when the source is not a repository or the sandbox cannot start', async () => {
    const notRepo = await tempDir();
    try {
      await expect(
        solve({
          sourceDir: notRepo,
          sandboxFactory: async (d) => new LocalSandbox(d),
          backend: ReplayBackend.fromTurns([]),
          task,
        }),
      ).rejects.toThrow(/is not a git repository/);
    } finally {
      await removeDir(notRepo);
    }
    let dir = '';
    await expect(
      solve({
        sourceDir: source,
        sandboxFactory: async (d) => {
          dir = d;
          throw new Error('docker: image frognano-sandbox not found');
        },
        backend: ReplayBackend.fromTurns([]),
        task,
      }),
    ).rejects.toThrow('docker: image frognano-sandbox not found');
    await expect(stat(dir)).rejects.toThrow();
  });

  it('keeps the trajectory and reports clearly when the model broke the repository', async () => {
    await expect(
      solve({
        sourceDir: source,
        sandboxFactory: async (dir) => new LocalSandbox(dir),
        backend: ReplayBackend.fromTurns([
          { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'rm -rf .git' } }] },
          { content: 'oops' },
        ]),
        task,
        outDir: out,
      }),
    ).rejects.toThrow(/could not compute the patch inside the sandbox: git failed/);
    const saved = JSON.parse(await readFile(path.join(out, 'trajectory.json'), 'utf8'));
    expect(saved.error).toMatch(/could not compute the patch/);
    expect(saved.n_steps).toBe(2);
  });

  it("runs every command of its own (setup, patch, tests) clean; the model's go through its tool as before", async () => {
    const calls: Array<{ argv0: string; clean: boolean; network: boolean }> = [];
    await solve({
      sourceDir: source,
      sandboxFactory: async (dir) => {
        const sb = new LocalSandbox(dir);
        const exec = sb.exec.bind(sb);
        const spawn = sb.spawn.bind(sb);
        sb.exec = (command, options = {}) => {
          calls.push({
            argv0: command.split(' ')[0],
            clean: options.clean === true,
            network: options.network === true,
          });
          return exec(command, options);
        };
        sb.spawn = (argv, options = {}) => {
          if (argv[0] === '/bin/sh') calls.push({ argv0: 'tool', clean: false, network: false });
          return spawn(argv, options);
        };
        return sb;
      },
      backend: ReplayBackend.fromTurns([
        { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'true' } }] },
        { content: 'Done.' },
      ]),
      task,
      setupCommands: ['echo setup'],
      setupNetwork: true,
      testCommands: ['echo test'],
    });
    expect(calls).toEqual([
      { argv0: 'echo', clean: true, network: true },
      { argv0: 'tool', clean: false, network: false },
      { argv0: 'x=$(mktemp)', clean: true, network: false },
      { argv0: '/usr/bin/git', clean: true, network: false },
      { argv0: '/usr/bin/git', clean: true, network: false },
      { argv0: 'echo', clean: true, network: false },
    ]);
  });
});

describe('solve in the bwrap sandbox', () => {
  let source: string;
  let hostDir: string;
  beforeEach(async () => {
    source = await makeRepo(SAMPLE_FILES);
    hostDir = await tempDir('fn-leaf-host-');
  });
  afterEach(async () => {
    await removeDir(source);
    await removeDir(hostDir);
  });

  it('computes the patch inside the sandbox, so git config the model planted never runs on the host', async () => {
    const marker = path.join(hostDir, 'pwned');
    // The model turns every `git add` into a command run (a clean filter), then changes a file.
    const plant = [
      `git config filter.evil.clean 'touch ${marker}; echo ran > .git/filter-ran; cat'`,
      "echo '* filter=evil' > .gitattributes",
      "sed -i 's/a - b/a + b/' src/math.js",
    ].join(' && ');
    const result = await solve({
      sourceDir: source,
      sandboxFactory: (dir) => BwrapSandbox.create(dir),
      backend: ReplayBackend.fromTurns([
        { content: '', tool_calls: [{ name: 'Bash', arguments: { command: plant } }] },
        { content: 'done' },
      ]),
      task,
      testCommands: ['cat .git/filter-ran'],
    });
    expect(result.trajectory.steps[0].observations[0].observation).toMatch(/^Exit code: 0\n/);
    expect(result.patch).toContain('+  return a + b;');
    // The filter did run, but inside the sandbox: it could not reach the host path.
    expect(result.testResults[0]).toMatchObject({ exitCode: 0, outputTail: 'ran\n' });
    await expect(stat(marker)).rejects.toThrow();
  });
});
