import { jest } from '@jest/globals';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadTrajectoryFile } from '../../src/cli/trajectoryFile.js';
import { startViewServer } from '../../src/cli/viewServer.js';
import { cleanEnv, makeRepo, runFrognano, snapshotTree, tempDir, writeJson, solveOnBwrap } from './helpers.js';

// The real CLI as a subprocess, on real git repositories, in the bwrap sandbox, with the replay backend.
jest.setTimeout(120_000);

const CALC = 'add() { echo $(( $1 - $2 )); }\n';
const CHECK = `bash -c '. ./calc.sh; [ "$(add 2 3)" = 5 ]'`;

const FIX_SCRIPT = {
  turns: [
    { content: 'Let me look at the function.', tool_calls: [{ name: 'Read', arguments: { file_path: 'calc.sh' } }] },
    {
      content: '',
      tool_calls: [
        { name: 'Edit', arguments: { file_path: 'calc.sh', old_string: '$1 - $2', new_string: '$1 + $2' } },
        { name: 'Write', arguments: { file_path: 'NOTES.md', content: 'add() now adds.\n' } },
        { name: 'Bash', arguments: { command: '. ./calc.sh && add 2 3' } },
      ],
    },
    { content: 'Fixed add() to return the sum of its arguments.' },
  ],
};

let work: string;
let repo: string;
let before: Map<string, string>;

beforeAll(async () => {
  work = await tempDir('solve');
  repo = await makeRepo(path.join(work, 'repo'), { 'calc.sh': CALC, 'README.md': '# calc\n' });
  before = await snapshotTree(repo);
  await writeJson(path.join(work, 'fix.json'), FIX_SCRIPT);
});

afterAll(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

async function script(name: string, value: unknown): Promise<string> {
  return writeJson(path.join(work, name), value);
}

describe('frognano solve', () => {
  let outDir: string;
  let run: Awaited<ReturnType<typeof runFrognano>>;

  beforeAll(async () => {
    outDir = path.join(work, 'out-fix');
    run = await solveOnBwrap(
      repo,
      'add() subtracts\n\nadd 2 3 prints -1 instead of 5.',
      path.join(work, 'fix.json'),
      outDir,
      '--test',
      CHECK,
      '--max-turns',
      '10',
      '--wall-time',
      '5m',
    );
  });

  test('produces a patch: exit 0, patch file, trajectory JSON and Markdown', async () => {
    expect(run.stderr).not.toMatch(/unexpected error/);
    expect(run.code).toBe(0);
    const patch = await fs.readFile(path.join(outDir, 'changes.patch'), 'utf8');
    expect(patch).toContain('diff --git a/calc.sh b/calc.sh');
    expect(patch).toContain('-add() { echo $(( $1 - $2 )); }');
    expect(patch).toContain('+add() { echo $(( $1 + $2 )); }');
    expect(patch).toContain('diff --git a/NOTES.md b/NOTES.md');
    const t = await loadTrajectoryFile(path.join(outDir, 'trajectory.json'));
    expect(t.exit_reason).toBe('agent');
    expect(t.n_steps).toBe(3);
    expect(t.frognano.task.title).toBe('add() subtracts');
    expect(t.frognano.task.body).toBe('add 2 3 prints -1 instead of 5.');
    expect(t.frognano.sampling).toMatchObject({
      temperature: 0.6,
      topP: 0.95,
      topK: 20,
      seed: 42,
      enableThinking: true,
    });
    expect(t.output_patch).toBe(patch);
    // The Bash call really ran in the sandbox on the edited copy.
    const bash = t.steps[1].observations.find((o) => o.tool === 'Bash');
    expect(bash?.observation).toMatch(/Exit code: 0[\s\S]*STDOUT:\s*5/);
    const md = await fs.readFile(path.join(outDir, 'trajectory.md'), 'utf8');
    expect(md).toContain('add() subtracts');
  });

  test('prints a summary with the diff stat, test result and file paths; progress goes to stderr', () => {
    expect(run.stdout).toMatch(/^Patch produced: the model finished after 3 turns/);
    expect(run.stdout).toMatch(/calc\.sh\s+\|\s+2 \+-/);
    expect(run.stdout).toContain(`✓ passed  ${CHECK}`);
    expect(run.stdout).toContain(path.join(outDir, 'changes.patch'));
    expect(run.stdout).toContain(`frognano replay ${path.join(outDir, 'trajectory.json')}`);
    // Not a TTY: plain timestamped lines, no ANSI.
    expect(run.stderr).toMatch(/^\[\d+\.\ds\] turn 1\/10 · context \d+ tokens$/m);
    expect(run.stderr).toMatch(/→ Edit calc\.sh/);
    expect(run.stderr).toMatch(/finished after 3 turns: agent/);
    expect(run.stderr).not.toContain('\x1b[');
  });

  test('the test results reach trajectory.json and the page of `frognano view`', async () => {
    const t = await loadTrajectoryFile(path.join(outDir, 'trajectory.json'));
    expect(t.frognano.test_results).toEqual([
      expect.objectContaining({ command: CHECK, exit_code: 0, timed_out: false }),
    ]);
    const server = await startViewServer(t);
    try {
      const page = await (await fetch(server.url)).text();
      expect(page).not.toContain('No test commands ran');
      expect(page).toMatch(/<li class="pass"><code>bash -c /);
    } finally {
      await server.close();
    }
  });

  test('the source repository is byte-identical afterwards', async () => {
    expect(await snapshotTree(repo)).toEqual(before);
  });

  test('replay prints the trajectory solve wrote', async () => {
    const r = await runFrognano(['replay', path.join(outDir, 'trajectory.json')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Task: add\(\) subtracts/);
    expect(r.stdout).toContain('→ Read(file_path="calc.sh")');
    expect(r.stdout).toContain('→ Edit(file_path="calc.sh", old_string="$1 - $2", new_string="$1 + $2")');
    expect(r.stdout).toContain('│ Edited calc.sh (1 replacement).');
    expect(r.stdout).toContain('Exit: agent — the model finished');
    expect(r.stdout).toMatch(/2 files changed, 2 insertions\(\+\), 1 deletion\(-\)/);
    const md = await runFrognano(['replay', path.join(outDir, 'trajectory.json'), '--markdown']);
    expect(md.code).toBe(0);
    expect(md.stdout).toBe(await fs.readFile(path.join(outDir, 'trajectory.md'), 'utf8'));
  });

  test('--json prints one machine-readable summary on stdout', async () => {
    const out = path.join(work, 'out-json');
    const r = await solveOnBwrap(repo, 'add() subtracts', path.join(work, 'fix.json'), out, '--json');
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary).toMatchObject({
      exitCode: 0,
      patchProduced: true,
      exitReason: 'agent',
      turns: 3,
      sandbox: 'bwrap',
      outDir: out,
      patchPath: path.join(out, 'changes.patch'),
      trajectoryJsonPath: path.join(out, 'trajectory.json'),
    });
    expect(summary.changedFiles).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'calc.sh', additions: 1, deletions: 1 })]),
    );
  });
});

describe('frognano solve outcomes', () => {
  test('a test command that ran 0 tests is not reported as passed', async () => {
    // What unittest before Python 3.12 prints (exit 0) when it finds no test.
    const none = `sh -c 'echo "Ran 0 tests in 0.000s"; echo; echo OK'`;
    const r = await solveOnBwrap(
      repo,
      'add() subtracts',
      path.join(work, 'fix.json'),
      path.join(work, 'out-none'),
      '--test',
      none,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`⚠ 0 tests ran  ${none}`);
    expect(r.stdout).not.toContain('✓ passed');
  });

  test('a run that changes nothing exits 1 and still writes the trajectory', async () => {
    const out = path.join(work, 'out-nopatch');
    const r = await solveOnBwrap(
      repo,
      'Explain calc.sh',
      await script('nochange.json', { turns: [{ content: 'calc.sh defines add().' }] }),
      out,
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^No patch: the model finished after 1 turn/);
    await expect(fs.stat(path.join(out, 'changes.patch'))).rejects.toThrow(/ENOENT/);
    expect((await loadTrajectoryFile(path.join(out, 'trajectory.json'))).exit_reason).toBe('agent');
  });

  test('a failing model exits 4 with the error', async () => {
    const out = path.join(work, 'out-error');
    const r = await solveOnBwrap(
      repo,
      'add() subtracts',
      await script('broken.json', { turns: [{ content: '', error: 'upstream server returned 500' }] }),
      out,
    );
    expect(r.code).toBe(4);
    expect(r.stdout).toMatch(/^Run failed: the model backend failed/);
    expect(r.stdout).toContain('upstream server returned 500');
    expect((await loadTrajectoryFile(path.join(out, 'trajectory.json'))).exit_reason).toBe('llm_query_error');
  });

  test('the turn limit ends the run, and the partial patch is still produced', async () => {
    const out = path.join(work, 'out-limit');
    const r = await solveOnBwrap(
      repo,
      'add() subtracts',
      path.join(work, 'fix.json'),
      out,
      '--max-turns',
      '2',
      '--json',
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ exitReason: 'max_turns', turns: 2, patchProduced: true, exitCode: 0 });
  });

  test('Ctrl-C stops the run, writes the partial trajectory and exits 130', async () => {
    const out = path.join(work, 'out-interrupt');
    const slow = await script('slow.json', {
      turns: [
        {
          content: 'Running the tests first.',
          tool_calls: [{ name: 'Bash', arguments: { command: 'sleep 60', timeout: 120 } }],
        },
        { content: 'never reached' },
      ],
    });
    let sent = false;
    const started = Date.now();
    const r = await runFrognano(
      ['solve', repo, '--issue', 'add() subtracts', '--replay', slow, '--sandbox', 'bwrap', '--out', out],
      {
        onStderr: (text, child) => {
          if (!sent && text.includes('→ Bash sleep 60')) {
            sent = true;
            setTimeout(() => child.kill('SIGINT'), 300);
          }
        },
      },
    );
    expect(sent).toBe(true);
    expect(r.code).toBe(130);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(r.stderr).toMatch(/Interrupted \(SIGINT\): stopping the run and writing the partial trajectory/);
    expect(r.stdout).toMatch(/^Interrupted: the run was cancelled after 1 turn/);
    const t = await loadTrajectoryFile(path.join(out, 'trajectory.json'));
    expect(t.exit_reason).toBe('cancelled');
    expect(t.steps[0].assistant.tool_calls?.[0].function.name).toBe('Bash');
    expect(await snapshotTree(repo)).toEqual(before);
  });
});

describe('frognano solve with a real model', () => {
  test('a tiny ONNX model (random weights) runs through onnxruntime: one turn cut at --max-new-tokens, exit 1', async () => {
    const { buildTinyModel } = await import('../support/tinyModel/buildTinyModel.js');
    const modelDir = path.join(work, 'tiny-model');
    await buildTinyModel(modelDir);
    const out = path.join(work, 'out-onnx');
    const r = await runFrognano([
      'solve',
      repo,
      '--issue',
      'add() subtracts',
      '--model-dir',
      modelDir,
      '--sandbox',
      'bwrap',
      '--out',
      out,
      '--max-new-tokens',
      '16',
      '--max-turns',
      '2',
      '--json',
    ]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({
      exitReason: 'max_tokens_per_turn',
      turns: 1,
      completionTokens: 16,
      patchProduced: false,
    });
    expect(r.stderr).toMatch(/turn 1: generated 16 tokens in/);
    const t = await loadTrajectoryFile(path.join(out, 'trajectory.json'));
    expect(t.frognano.model.backend).toBe('onnx');
    expect(t.frognano.steps[0].completion_tokens).toBe(16);
    expect(await snapshotTree(repo)).toEqual(before);
  });
});

describe('frognano solve output directory and issue file', () => {
  test('default --out is ./frognano-out/<timestamp>; --issue-file gives title and body', async () => {
    const cwd = path.join(work, 'cwd');
    await fs.mkdir(cwd, { recursive: true });
    await fs.writeFile(path.join(cwd, 'issue.md'), '# add() subtracts\n\nIt should add.\n');
    const r = await runFrognano(
      [
        'solve',
        repo,
        '--issue-file',
        'issue.md',
        '--replay',
        path.join(work, 'fix.json'),
        '--sandbox',
        'bwrap',
        '--json',
      ],
      { cwd },
    );
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.outDir).toMatch(
      new RegExp(`^${cwd}/frognano-out/\\d{4}-\\d\\d-\\d\\dT\\d\\d-\\d\\d-\\d\\dZ(-\\d+)?$`),
    );
    const t = await loadTrajectoryFile(summary.trajectoryJsonPath);
    expect(t.frognano.task).toMatchObject({ title: 'add() subtracts', body: 'It should add.' });
  });

  test('started inside the repository, the default output goes to the temp dir, not into the repository', async () => {
    const r = await runFrognano(
      [
        'solve',
        '.',
        '--issue',
        'add() subtracts',
        '--replay',
        path.join(work, 'fix.json'),
        '--sandbox',
        'bwrap',
        '--json',
      ],
      { cwd: repo },
    );
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.outDir.startsWith(path.join(os.tmpdir(), 'frognano-out'))).toBe(true);
    expect(r.stderr).toContain('the current directory is inside the repository, which solve never writes to');
    expect(await snapshotTree(repo)).toEqual(before);
    await fs.rm(summary.outDir, { recursive: true, force: true });
  });
});

describe('frognano solve setup and usage errors', () => {
  test('missing model directory: exit 3 and a clear message, before anything runs', async () => {
    const r = await runFrognano([
      'solve',
      repo,
      '--issue',
      'x',
      '--model-dir',
      path.join(work, 'no-such-model'),
      '--out',
      path.join(work, 'o1'),
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`frognano: model directory ${path.join(work, 'no-such-model')} does not exist`);
    expect(r.stderr).toMatch(/→ pass --model-dir with the directory/);
  });

  test('an endpoint nobody answers on: exit 3 before the run, JSON error with --json, no empty out dir', async () => {
    const out = path.join(work, 'o-endpoint');
    const r = await runFrognano([
      'solve',
      repo,
      '--issue',
      'x',
      '--endpoint',
      'http://127.0.0.1:9/v1',
      '--model',
      'frognano-4b',
      '--sandbox',
      'bwrap',
      '--out',
      out,
      '--json',
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/frognano: the model endpoint is not usable: cannot reach http:\/\/127\.0\.0\.1:9\/v1/);
    expect(JSON.parse(r.stdout)).toMatchObject({ exitCode: 3, error: expect.stringContaining('cannot reach') });
    await expect(fs.stat(out)).rejects.toThrow(/ENOENT/);
    const doctor = await runFrognano([
      'doctor',
      '--sandbox',
      'bwrap',
      '--endpoint',
      'http://127.0.0.1:9/v1',
      '--model',
      'frognano-4b',
    ]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/^✗ Model\s+cannot reach http:\/\/127\.0\.0\.1:9\/v1/m);
  });

  test('no usable sandbox: exit 3 saying why, for an explicit kind and for auto', async () => {
    const env = cleanEnv({
      FROGNANO_SANDBOX_IMAGE: 'frognano-sandbox:no-such-tag',
      FROGNANO_SANDBOX_BWRAP: '/nonexistent/bwrap',
    });
    const docker = await runFrognano(
      ['solve', repo, '--issue', 'x', '--replay', path.join(work, 'fix.json'), '--sandbox', 'docker'],
      { env },
    );
    expect(docker.code).toBe(3);
    expect(docker.stderr).toMatch(
      /frognano: the docker sandbox is not usable: (Docker .*image frognano-sandbox:no-such-tag not found|Docker engine not reachable)/,
    );
    const auto = await runFrognano(['solve', repo, '--issue', 'x', '--replay', path.join(work, 'fix.json')], { env });
    expect(auto.code).toBe(3);
    expect(auto.stderr).toMatch(/frognano: no sandbox available: no isolating sandbox is usable: .*bubblewrap/);
    expect(auto.stderr).toContain('→ run `frognano doctor` for details, or choose one with --sandbox');
    // Each fix is said once, whether it is part of the message (auto) or on the hint line (explicit kind).
    for (const out of [docker.stderr, auto.stderr]) {
      expect(out.split('scripts/build-sandbox-image.sh').length - 1).toBeLessThanOrEqual(1);
      expect(out.split('apt-get install bubblewrap').length - 1).toBeLessThanOrEqual(1);
    }
  });

  test('no model at all: exit 3 naming the options', async () => {
    const r = await runFrognano(['solve', repo, '--issue', 'x']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/no model configured[\s\S]*--model-dir DIR, --endpoint URL --model NAME or --replay FILE/);
  });

  test('a directory that is not a git repository: exit 3', async () => {
    const plain = path.join(work, 'plain');
    await fs.mkdir(plain, { recursive: true });
    await fs.writeFile(path.join(plain, 'a.txt'), 'a');
    const r = await runFrognano(['solve', plain, '--issue', 'x', '--replay', path.join(work, 'fix.json')]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`frognano: ${plain} is not a git repository`);
    expect(r.stderr).toMatch(/git init && git add -A && git commit/);
  });

  test('a missing or unreadable repository, or a subdirectory of one: exit 3', async () => {
    const missing = await runFrognano([
      'solve',
      path.join(work, 'nope'),
      '--issue',
      'x',
      '--replay',
      path.join(work, 'fix.json'),
    ]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain(`repository directory ${path.join(work, 'nope')} does not exist`);

    const file = await runFrognano([
      'solve',
      path.join(repo, 'calc.sh'),
      '--issue',
      'x',
      '--replay',
      path.join(work, 'fix.json'),
    ]);
    expect(file.code).toBe(3);
    expect(file.stderr).toContain('is not a directory');

    // A repository of its own: the shared one must stay untouched for the byte-identical checks.
    const outer = await makeRepo(path.join(work, 'outer'), { 'sub/file.txt': 'x\n' });
    const sub = await runFrognano([
      'solve',
      path.join(outer, 'sub'),
      '--issue',
      'x',
      '--replay',
      path.join(work, 'fix.json'),
    ]);
    expect(sub.code).toBe(3);
    expect(sub.stderr).toContain(`is inside the git repository ${outer}, not its top level`);
  });

  test('--out inside the repository is refused, also through a symlink; an impossible --out is a setup error', async () => {
    const r = await solveOnBwrap(repo, 'x', path.join(work, 'fix.json'), path.join(repo, 'out'));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--out .* is inside the repository/);
    await fs.symlink(repo, path.join(work, 'link-to-repo'));
    const viaLink = await solveOnBwrap(repo, 'x', path.join(work, 'fix.json'), path.join(work, 'link-to-repo', 'out'));
    expect(viaLink.code).toBe(2);
    expect(viaLink.stderr).toContain(`is inside the repository ${repo}`);
    const underFile = await solveOnBwrap(repo, 'x', path.join(work, 'fix.json'), path.join(work, 'fix.json', 'out'));
    expect(underFile.code).toBe(3);
    expect(underFile.stderr).toContain(
      `cannot create the output directory ${path.join(work, 'fix.json', 'out')} (ENOTDIR)`,
    );
    expect(await snapshotTree(repo)).toEqual(before);
  });

  test.each([
    [['solve'], /solve needs the repository directory/],
    [
      ['solve', '.', '--replay', 'x.json'],
      /solve needs the issue: --issue-file FILE, --issue TEXT or --github OWNER\/REPO#N/,
    ],
    [['solve', '.', '--issue', 'a', '--issue-file', 'b'], /give the issue once: --issue-file and --issue/],
    [['solve', '.', '--issue', 'a', '--frobnicate'], /Unknown option '--frobnicate'/],
    [['solve', '.', '--issue', 'a', '--max-turns', 'many'], /--max-turns wants a positive whole number, got 'many'/],
    [['solve', '.', '--issue', 'a', '--wall-time', 'soon'], /--wall-time wants a duration/],
    [['solve', '.', '--github', 'not-a-ref'], /--github wants owner\/repo#NUMBER/],
    [['solve', '.', '--issue', 'a', '--sandbox', 'vm'], /--sandbox must be one of docker, bwrap, local/],
    [
      ['solve', '.', '--issue', 'a', '--replay', 'a.json', '--model-dir', 'm'],
      /choose one model: --model-dir and --replay/,
    ],
    [['solve', '.', '--issue', 'a', '--endpoint', 'http://localhost:8000/v1'], /--endpoint needs --model NAME/],
    [
      ['solve', '.', '--issue', 'a', '--max-new-tokens', '200000'],
      /maxNewTokens \(200000\) must be smaller than contextTokens/,
    ],
    [['solve', '.', '--issue', 'a', '--temperature', 'hot'], /--temperature must be a number from 0 to 5, got "hot"/],
  ])('usage error %j: exit 2 with the message and the usage', async (args, message) => {
    const r = await runFrognano(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain('Usage: frognano solve <repo-dir>');
    expect(r.stderr).toContain("Run 'frognano solve --help' for every option and examples.");
    expect(r.stdout).toBe('');
  });

  test('--help prints usage with examples and exits 0; no command exits 2', async () => {
    const help = await runFrognano(['solve', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Examples:');
    const none = await runFrognano([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Exit codes:');
    const unknown = await runFrognano(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
  });
});
