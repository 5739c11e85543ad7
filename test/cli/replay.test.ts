import { promises as fs } from 'node:fs';
import path from 'node:path';
import { diffStat, renderDiffStat } from '../../src/cli/diffStat.js';
import { renderTrajectoryText } from '../../src/cli/trajectoryText.js';
import type { Trajectory } from '../../src/leaf/trajectory.js';
import { runFrognano, tempDir, writeJson } from './helpers.js';

function trajectory(overrides: Partial<Trajectory> = {}, facts: Partial<Trajectory['frognano']> = {}): Trajectory {
  return {
    trajectory_format: 'leaf-function-calling',
    trajectory_id: 't-1',
    instance_id: 'local',
    seed: 42,
    messages: [],
    tools: [],
    steps: [
      {
        step: 0,
        assistant: {
          role: 'assistant',
          content: 'Running the tests.',
          tool_calls: [
            {
              id: 'c1',
              type: 'function',
              function: { name: 'Bash', arguments: '{"command": "npm test", "timeout": 60}' },
            },
          ],
        },
        observations: [{ tool: 'Bash', observation: `Exit code: 1\nSTDOUT:\n${'x'.repeat(5000)}END` }],
      },
    ],
    n_steps: 1,
    exit_reason: 'max_turns',
    error: null,
    final_message: '',
    context_tokens: 4000,
    elapsed_sec: 5.1,
    output_patch: '',
    partial: false,
    frognano: {
      task: { title: 'Fix the parser', body: 'It crashes.' },
      model: { backend: 'openai', model: 'frognano-4b' },
      sampling: {},
      started_at: '2026-12-02T12:00:00.000Z',
      total_completion_tokens: 40,
      context_budget: 65536,
      steps: [
        {
          finish_reason: 'tool_calls',
          prompt_tokens: 3000,
          completion_tokens: 40,
          generate_ms: 900,
          tools_ms: 4200,
          parse_errors: [],
          observations: [{ tool_call_id: 'c1', is_error: false, elapsed_ms: 4200 }],
        },
      ],
      ...facts,
    },
    ...overrides,
  };
}

let work: string;
beforeAll(async () => {
  work = await tempDir('replay');
});
afterAll(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

describe('frognano replay (subprocess)', () => {
  test('long observations are trimmed in the middle unless --full', async () => {
    const file = await writeJson(path.join(work, 'long.json'), trajectory());
    const r = await runFrognano(['replay', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('→ Bash(command="npm test", timeout=60)');
    expect(r.stdout).toMatch(/\[… \d+ chars trimmed …\]/);
    expect(r.stdout).toContain('Exit: max_turns — the turn limit was reached');
    expect(r.stdout).toContain('Patch: none');
    const full = await runFrognano(['replay', file, '--full']);
    expect(full.stdout).not.toContain('chars trimmed');
    expect(full.stdout).toContain(`${'x'.repeat(5000)}END`);
  });

  test('a file with wrong fields: exit 3 naming each field and what is wrong', async () => {
    const bad = trajectory();
    (bad.frognano.steps[0] as unknown as Record<string, unknown>).prompt_tokens = 'many';
    (bad as unknown as Record<string, unknown>).exit_reason = 'exploded';
    const file = await writeJson(path.join(work, 'bad.json'), bad);
    const r = await runFrognano(['replay', file]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`frognano: ${file} is not a Leaf trajectory:`);
    expect(r.stderr).toMatch(/frognano\.steps\[0\]\.prompt_tokens: Invalid input: expected number, received string/);
    expect(r.stderr).toMatch(/exit_reason: Invalid option/);
    expect(r.stdout).toBe('');
  });

  test('not JSON, a missing file, a directory, a replay script instead of a trajectory', async () => {
    const cut = path.join(work, 'cut.json');
    await fs.writeFile(cut, JSON.stringify(trajectory()).slice(0, 200));
    const r1 = await runFrognano(['replay', cut]);
    expect(r1.code).toBe(3);
    expect(r1.stderr).toMatch(/is not valid JSON: .*\n  → was the file cut off\?/);

    const r2 = await runFrognano(['replay', path.join(work, 'none.json')]);
    expect(r2.code).toBe(3);
    expect(r2.stderr).toContain(`cannot read ${path.join(work, 'none.json')} (ENOENT)`);

    const r3 = await runFrognano(['replay', work]);
    expect(r3.code).toBe(3);
    expect(r3.stderr).toMatch(/\(EISDIR\)\n  → give the trajectory\.json file inside the output directory/);

    const script = await writeJson(path.join(work, 'script.json'), { turns: [{ content: 'hi' }] });
    const r4 = await runFrognano(['replay', script]);
    expect(r4.code).toBe(3);
    expect(r4.stderr).toMatch(/trajectory_format: Invalid input: expected "leaf-function-calling"/);
  });

  test('usage errors exit 2', async () => {
    const none = await runFrognano(['replay']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('replay needs the trajectory.json to print.');
    expect(none.stderr).toContain('Usage: frognano replay');
    const two = await runFrognano(['replay', 'a.json', 'b.json']);
    expect(two.code).toBe(2);
  });
});

describe('rendering helpers', () => {
  test('diffStat counts per file, follows renames and marks binaries', () => {
    const patch = [
      'diff --git a/src/a.ts b/src/a.ts',
      'index 1..2 100644',
      '--- a/src/a.ts',
      '+++ b/src/a.ts',
      '@@ -1,3 +1,3 @@',
      ' keep',
      '-old',
      '+new',
      '+more',
      'diff --git a/old.txt b/new.txt',
      'similarity index 90%',
      'rename from old.txt',
      'rename to new.txt',
      'diff --git a/logo.png b/logo.png',
      'new file mode 100644',
      'GIT binary patch',
      'literal 3',
      '',
    ].join('\n');
    const files = diffStat(patch);
    expect(files).toEqual([
      { path: 'src/a.ts', additions: 2, deletions: 1, binary: false },
      { path: 'new.txt', additions: 0, deletions: 0, binary: false },
      { path: 'logo.png', additions: 0, deletions: 0, binary: true },
    ]);
    expect(renderDiffStat(files)).toEqual([
      ' src/a.ts |    3 ++-',
      ' new.txt  |    0',
      ' logo.png | Bin',
      ' 3 files changed, 2 insertions(+), 1 deletion(-)',
    ]);
  });

  test('text rendering shows reasoning, multi-line arguments as blocks and parse errors', () => {
    const base = trajectory().frognano.steps[0];
    const t = trajectory(
      {
        steps: [
          {
            step: 0,
            assistant: {
              role: 'assistant',
              content: '',
              reasoning_content: 'The file\nneeds a header.',
              tool_calls: [
                {
                  id: 'w',
                  type: 'function',
                  function: {
                    name: 'Write',
                    arguments: JSON.stringify({ file_path: 'a.md', content: '# A\n\ntext\n' }),
                  },
                },
              ],
            },
            observations: [{ tool: 'Write', observation: 'Wrote a.md (11 bytes).' }],
          },
        ],
        error: 'boom',
      },
      {
        task: { title: 'T', body: '', repo: 'o/r', issueNumber: 5 },
        steps: [
          {
            ...base,
            parse_errors: ['<tool_call> without </tool_call>'],
            observations: [{ tool_call_id: 'w', is_error: false, elapsed_ms: 3 }],
          },
        ],
      },
    );
    const text = renderTrajectoryText(t);
    expect(text).toMatch(/^Task: T \(o\/r#5\)\n/);
    expect(text).toContain('  thinking: The file needs a header.');
    expect(text).toContain(
      '  → Write(file_path="a.md", content=<4 lines>)\n    content:\n    ┆ # A\n    ┆ \n    ┆ text\n',
    );
    expect(text).toContain('    ✓ 0.0s\n    │ Wrote a.md (11 bytes).');
    expect(text).toContain('  ✗ malformed tool call: <tool_call> without </tool_call>');
    expect(text).toContain('Error: boom');
  });
});
