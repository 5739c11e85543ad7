import type { Trajectory, TrajectoryStep } from '../../src/leaf/trajectory.js';
import { renderRunPage } from '../../src/runs/page/render.js';
import { storedRound, type RoundKind, type StoredRound } from '../../src/runs/record.js';

/**
 * A run of `steps` turns whose JSON is about `bytes` long: every turn calls one of the five tools, Edit and Write
 * with real old/new text, Bash with long output; some text is hostile HTML, to prove it stays text.
 */
export function makeTrajectory(steps = 100, bytes = 1_000_000, tag = ''): Trajectory {
  const filler = Math.max(0, Math.floor(bytes / steps) - 900);
  const out: TrajectoryStep[] = [];
  const facts: Trajectory['frognano']['steps'] = [];
  for (let i = 0; i < steps; i++) {
    const tool = ['Read', 'Edit', 'Bash', 'Write', 'Glob'][i % 5]!;
    const args =
      tool === 'Edit'
        ? {
            file_path: `src/mod${i}.ts`,
            old_string: `const a = ${i};\nkeep();\nold line ${i}`,
            new_string: `const a = ${i + 1};\nkeep();\nnew line ${i}`,
          }
        : tool === 'Write'
          ? { file_path: `src/new${i}.ts`, content: `export const v${i} = ${i};\n`.repeat(5) }
          : tool === 'Bash'
            ? { command: `npm test -- step${i}` }
            : tool === 'Glob'
              ? { pattern: `src/**/*${i}.ts` }
              : { file_path: `src/mod${i}.ts` };
    const observation = `output of step ${i + 1}${tag} <script>alert(${i})</script>\n${'x'.repeat(100)}\n`.repeat(
      Math.max(1, Math.floor(filler / 150)),
    );
    out.push({
      step: i,
      assistant: {
        role: 'assistant',
        content: `Step ${i + 1}${tag}: I will use ${tool}. <img src=x onerror=alert(1)>`,
        reasoning_content: `Reasoning for step ${i + 1}${tag}: the ${tool} call is next.`,
        tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: tool, arguments: JSON.stringify(args) } }],
      },
      observations: [{ tool, observation }],
    });
    facts.push({
      finish_reason: 'tool_calls',
      prompt_tokens: 1000 + i * 10,
      completion_tokens: 50 + i,
      generate_ms: 800 + i,
      tools_ms: 120,
      parse_errors: [],
      observations: [{ tool_call_id: `call_${i}`, is_error: i % 17 === 16, elapsed_ms: 100 + i }],
    });
  }
  return {
    trajectory_format: 'leaf-function-calling',
    trajectory_id: `t${tag}`,
    instance_id: 'octo/demo#12',
    seed: 0,
    messages: [],
    tools: [],
    steps: out,
    n_steps: steps,
    exit_reason: 'agent',
    error: null,
    final_message: `Done${tag}: fixed the bug.`,
    context_tokens: 20000,
    elapsed_sec: 312,
    output_patch: '',
    partial: false,
    frognano: {
      task: {
        title: 'Fix the parser <b>now</b>',
        body: 'The parser fails on empty input.',
        repo: 'octo/demo',
        issueNumber: 12,
      },
      model: { backend: 'openai', model: 'frognano-4b' },
      sampling: {},
      started_at: '2026-12-01T10:00:00Z',
      total_completion_tokens: 0,
      context_budget: 32768,
      steps: facts,
    },
  };
}

const PATCH =
  'diff --git a/src/a.ts b/src/a.ts\nindex 1..2 100644\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,2 +1,2 @@\n-const a = 1;\n+const a = 2;\n keep();\n';

export function makeRound(
  o: {
    round?: number;
    kind?: RoundKind;
    steps?: number;
    bytes?: number;
    owner?: string;
    repo?: string;
    issueNumber?: number;
  } = {},
): StoredRound {
  const round = o.round ?? 0;
  const t = makeTrajectory(o.steps ?? 100, o.bytes ?? 1_000_000, ` (round ${round})`);
  return storedRound(t, {
    owner: o.owner ?? 'octo',
    repo: o.repo ?? 'demo',
    issueNumber: o.issueNumber ?? 12,
    round,
    kind: o.kind ?? (round === 0 ? 'draft' : 'follow-up'),
    trigger: round === 0 ? 'label by @maint' : 'review by @maint',
    result: round === 0 ? 'draft pull request opened' : 'commits pushed',
    pullNumber: 13,
    patch: PATCH,
    tests: [
      { command: 'npm test', exitCode: 0, timedOut: false, outputTail: 'all 12 tests passed' },
      { command: 'npm run lint', exitCode: 1, timedOut: false, outputTail: 'lint: 1 error <b>x</b>' },
    ],
  });
}

/** The rounds issue #31 found: each well inside the store's 16 MiB bound. */
export function hostileRound(name: 'patch' | 'deep' | 'steps'): StoredRound {
  if (name === 'patch') {
    const r = makeRound({ steps: 10, bytes: 50_000 });
    // 2.7M empty lines: 2.7 MB stored, every line a <span> on the page.
    return { ...r, patch: `diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1,2700000 @@\n${'\n'.repeat(2_700_000)}` };
  }
  if (name === 'deep') {
    const r = makeRound({ steps: 10, bytes: 50_000 });
    const deep = `${'['.repeat(6000)}${']'.repeat(6000)}`;
    const call = r.trajectory.steps[0]!.assistant.tool_calls![0]!;
    call.function = { name: 'Read', arguments: `{"file_path":"src/a.ts","extra":${deep}}` };
    return r;
  }
  return makeRound({ steps: 20_000, bytes: 12_000_000 });
}

/** The run page of one stored round, alone in its run (octo/demo#12), as the app serves it. */
export function renderPage(r: StoredRound): string {
  return renderRunPage({
    round: r,
    rounds: [r.summary],
    roundHref: (n) => `/runs/octo/demo/12/${n}`,
    staticBase: '/runs/_static',
  });
}
