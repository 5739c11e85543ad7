import { ReplayBackend } from '../../src/inference/replay.js';
import { runLeaf } from '../../src/leaf/loop.js';
import { LEAF_TOOLS } from '../../src/leaf/tools.js';
import {
  renderTrajectoryMarkdown,
  serializeTrajectory,
  TrajectoryFileSchema,
  trajectoryFromFile,
  type StepFacts,
  type Trajectory,
  type TrajectoryStep,
} from '../../src/leaf/trajectory.js';
import { LocalSandbox } from '../../src/sandbox/local.js';
import { registerSecret, forgetSecret } from '../../src/util/redact.js';
import { isolateHome, makeRepo, removeDir, SAMPLE_FILES } from './helpers.js';

isolateHome();

interface Step {
  step: TrajectoryStep;
  facts: StepFacts;
}

function step(i: number, observation: string): Step {
  const id = `call_${i}`;
  return {
    step: {
      step: i,
      assistant: {
        role: 'assistant',
        content: `Turn ${i} thinking out loud. `.repeat(50),
        reasoning_content: 'r'.repeat(3000),
        tool_calls: [
          {
            id,
            type: 'function',
            function: { name: 'Bash', arguments: JSON.stringify({ command: `make test-${i}` }) },
          },
        ],
      },
      observations: [{ tool: 'Bash', observation }],
    },
    facts: {
      finish_reason: 'tool_calls',
      prompt_tokens: 1000 * i,
      completion_tokens: 50,
      generate_ms: 1500,
      tools_ms: 5,
      parse_errors: [],
      observations: [{ tool_call_id: id, is_error: false, elapsed_ms: 5 }],
    },
  };
}

function trajectory(steps: Step[], patch = ''): Trajectory {
  return {
    trajectory_format: 'leaf-function-calling',
    trajectory_id: 't1',
    instance_id: 'acme__calc-3',
    seed: 42,
    messages: [],
    tools: LEAF_TOOLS,
    steps: steps.map((s) => s.step),
    n_steps: steps.length,
    exit_reason: 'agent',
    error: null,
    final_message: 'Done: fixed the build.',
    context_tokens: 12345,
    elapsed_sec: 93.4,
    output_patch: patch,
    partial: false,
    frognano: {
      task: { title: 'Fix the build', body: 'It fails.', repo: 'acme/calc', issueNumber: 3 },
      model: { backend: 'replay', model: 'replay:test' },
      sampling: {},
      started_at: new Date(0).toISOString(),
      total_completion_tokens: 678,
      context_budget: 65536,
      steps: steps.map((s) => s.facts),
    },
  };
}

describe('renderTrajectoryMarkdown', () => {
  it('renders a readable summary with one collapsible section per turn', () => {
    const md = renderTrajectoryMarkdown(trajectory([step(0, 'Exit code: 0\nSTDOUT:\nok\n\nSTDERR:\n')]));
    expect(md).toContain('### FrogNano trajectory');
    expect(md).toContain('| Result | `agent`: the model finished |');
    expect(md).toContain('| Tokens | 12,345 in context, 678 generated |');
    expect(md).toContain('| Time | 1m 33s |');
    expect(md).toContain(
      '<details><summary>Turn 1: Bash <code>make test-0</code> <sub>(50 tokens, 1.5s)</sub></summary>',
    );
    expect(md).toContain('```text\nExit code: 0\nSTDOUT:\nok\n\nSTDERR:\n\n```');
    expect(md).toContain('Done: fixed the build.');
    expect(md.match(/<details>/g)).toHaveLength(1);
    expect(md.match(/<\/details>/g)).toHaveLength(1);
  });

  it('elides long outputs in the middle and keeps code fences intact', () => {
    const out = `START ${'x'.repeat(50_000)} \`\`\`\`\` END`;
    const md = renderTrajectoryMarkdown(trajectory([step(0, out)]));
    expect(md).toMatch(/START x+\n… \[\d+ chars elided\] …\nx* ````` END/);
    expect(md).toContain('``````text\nSTART'); // fence longer than the 5 backticks inside
  });

  it('escapes HTML in summaries and keeps model text out of the rendered Markdown', () => {
    const s = step(0, 'ok');
    s.step.assistant.tool_calls = [
      {
        id: 'call_0',
        type: 'function',
        function: {
          name: 'Bash',
          arguments: JSON.stringify({ command: 'echo "</summary><img src=x onerror=alert(1)> @octocat"' }),
        },
      },
    ];
    const md = renderTrajectoryMarkdown(trajectory([s]));
    expect(md).toContain('&lt;/summary&gt;&lt;img src=x');
    // Outside code blocks (where GitHub renders HTML) there is no raw tag from the model.
    const outsideCode = md.replace(/(`{3,})[a-z]*\n[\s\S]*?\n\1/g, '').replace(/<code>.*?<\/code>/g, '');
    expect(outsideCode).not.toContain('<img');
    expect(outsideCode).not.toContain('@octocat');
  });

  it.each([60_000, 20_000, 5_000])('never exceeds maxChars=%i, even for a huge trajectory', (maxChars) => {
    const steps = Array.from({ length: 400 }, (_, i) => step(i, `${i}:`.concat('output line\n'.repeat(20_000))));
    const t = trajectory(steps, 'diff --git a/x b/x\n'.repeat(10_000));
    t.final_message = 'F'.repeat(100_000);
    t.error = 'E'.repeat(100_000);
    const md = renderTrajectoryMarkdown(t, maxChars);
    expect(md.length).toBeLessThanOrEqual(maxChars);
    expect(md).toContain('Turn 1:');
    expect(md).toContain('Turn 400:');
    expect(md).toMatch(/turns not shown/);
    // Every opened section is closed, so the rest of a PR body still renders.
    expect(md.match(/<details>/g)!.length).toBe(md.match(/<\/details>/g)!.length);
  });

  it('fits the GitHub comment limit with the default maxChars', () => {
    const steps = Array.from({ length: 100 }, (_, i) => step(i, 'y'.repeat(100_000)));
    expect(renderTrajectoryMarkdown(trajectory(steps)).length).toBeLessThanOrEqual(60_000);
  });
});

describe('secrets in trajectories', () => {
  let repo: string;
  beforeEach(async () => {
    repo = await makeRepo({ ...SAMPLE_FILES, '.env.example': 'TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n' });
  });
  afterEach(() => removeDir(repo));

  it('scrubs tokens that reached observations from the JSON and the Markdown', async () => {
    const registered = 'super-secret-installation-token-value';
    registerSecret(registered);
    try {
      const backend = ReplayBackend.fromTurns([
        {
          content: '',
          tool_calls: [
            { name: 'Read', arguments: { file_path: '.env.example' } },
            { name: 'Bash', arguments: { command: `echo ${registered}; echo https://user:hunter2@example.com/x` } },
          ],
        },
        { content: 'found ghp_0123456789abcdefghijklmnopqrstuvwxyzAB' },
      ]);
      const t = await runLeaf({ sandbox: new LocalSandbox(repo), backend, task: { title: 't', body: 'b' } });
      expect(t.steps[0].observations[0].observation).toContain('ghp_0123'); // the model itself saw the file
      for (const text of [serializeTrajectory(t), renderTrajectoryMarkdown(t)]) {
        expect(text).not.toContain('ghp_0123456789');
        expect(text).not.toContain(registered);
        expect(text).not.toContain('hunter2');
        expect(text).toContain('[REDACTED]');
      }
      const stored = JSON.parse(serializeTrajectory(t)) as unknown;
      expect(TrajectoryFileSchema.parse(stored).exit_reason).toBe('agent');
    } finally {
      forgetSecret(registered);
    }
  });
});

describe('trajectory format', () => {
  it("has upstream Leaf's top-level keys, in upstream's order, and this project's facts under one key", async () => {
    const repo = await makeRepo(SAMPLE_FILES);
    try {
      const t = await runLeaf({
        sandbox: new LocalSandbox(repo),
        backend: ReplayBackend.fromTurns([
          { content: '', tool_calls: [{ name: 'Read', arguments: { file_path: 'README.md' } }] },
          { content: 'done' },
        ]),
        task: { title: 't', body: 'b' },
      });
      expect(Object.keys(JSON.parse(serializeTrajectory(t)) as object)).toEqual([
        'trajectory_format',
        'trajectory_id',
        'instance_id',
        'seed',
        'messages',
        'tools',
        'steps',
        'n_steps',
        'exit_reason',
        'error',
        'final_message',
        'context_tokens',
        'elapsed_sec',
        'output_patch',
        'partial',
        'frognano',
      ]);
    } finally {
      await removeDir(repo);
    }
  });

  it("reads a trajectory written by upstream Leaf (no 'frognano' key)", () => {
    const upstream = {
      trajectory_format: 'leaf-function-calling',
      trajectory_id: 'a'.repeat(32),
      instance_id: 'django__django-11099',
      seed: 42,
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: 'U' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'Read', arguments: '{"file_path": "a"}' } }],
          reasoning_content: 'hm',
        },
        { role: 'tool', tool_call_id: 'c1', content: 'a\n1. x' },
        { role: 'assistant', content: 'done' },
      ],
      tools: LEAF_TOOLS,
      steps: [
        {
          step: 0,
          assistant: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'Read', arguments: '{"file_path": "a"}' } }],
          },
          observations: [{ tool: 'Read', observation: 'a\n1. x' }],
        },
        { step: 1, assistant: { role: 'assistant', content: 'done' }, observations: [] },
      ],
      n_steps: 2,
      exit_reason: 'agent',
      error: null,
      final_message: 'done',
      context_tokens: 100,
      elapsed_sec: 1.5,
      output_patch: '',
      partial: false,
    };
    const parsed = TrajectoryFileSchema.parse(upstream);
    expect(parsed.steps[0].assistant.tool_calls![0].function.arguments).toBe('{"file_path": "a"}');
    expect(renderTrajectoryMarkdown(trajectoryFromFile(parsed))).toContain('Read <code>a</code>');
  });
});
