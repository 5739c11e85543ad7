import { rmSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { ReplayBackend, REPLAY_EXHAUSTED_MESSAGE, type ReplayTurn } from '../../src/inference/replay.js';
import { ContextOverflowError, type GenerateOptions, type ModelBackend } from '../../src/inference/types.js';
import type { LeafEvent } from '../../src/leaf/events.js';
import { runLeaf } from '../../src/leaf/loop.js';
import { computePatch } from '../../src/leaf/patch.js';
import { SYSTEM_PROMPT } from '../../src/leaf/prompt.js';
import { LEAF_SAMPLING } from '../../src/leaf/sampling.js';
import { describeExit, stepFacts } from '../../src/leaf/trajectory.js';
import { LocalSandbox } from '../../src/sandbox/local.js';
import { git, makeRepo, removeDir, SAMPLE_FILES, isolateHome } from './helpers.js';

isolateHome();

const task = {
  title: 'add() subtracts',
  body: 'add(2, 3) returns -1; it should return 5.',
  repo: 'acme/calc',
  issueNumber: 7,
};

/** Endless tool calling: every turn reads a file. */
const readForever = (n: number): ReplayTurn[] =>
  Array.from({ length: n }, () => ({
    content: '',
    tool_calls: [{ name: 'Read', arguments: { file_path: 'README.md' } }],
  }));

/** The replay backend, with what each generate call was asked for recorded, and an optional window. */
function recording(replay: ReplayBackend, contextLength?: number): ModelBackend & { options: GenerateOptions[] } {
  const options: GenerateOptions[] = [];
  return {
    options,
    info: () => ({ ...replay.info(), contextLength }),
    countTokens: (m, t) => replay.countTokens(m, t),
    generate: (m, t, o = {}) => {
      options.push(o);
      return replay.generate(m, t, o);
    },
  };
}

describe('runLeaf with the replay backend, a real repository and the local sandbox', () => {
  let repo: string;
  let sandbox: LocalSandbox;
  beforeEach(async () => {
    repo = await makeRepo(SAMPLE_FILES);
    sandbox = new LocalSandbox(repo);
  });
  afterEach(async () => {
    await sandbox.close();
    await removeDir(repo);
  });

  it('reports how full the context was when the server refuses the very first prompt', async () => {
    const replay = ReplayBackend.fromTurns([]);
    const backend: ModelBackend = {
      info: () => ({ ...replay.info(), contextLength: 8192 }),
      generate: async () => {
        throw new ContextOverflowError(
          "This model's maximum context length is 8192 tokens. However, you requested 9100 tokens.",
          9100,
          8192,
        );
      },
    };
    const t = await runLeaf({ sandbox, backend, task });
    expect(t.exit_reason).toBe('max_context_len');
    expect(t.context_tokens).toBe(9100);
  });

  it("passes the model server's retries on as model_retry events of the turn", async () => {
    const replay = ReplayBackend.fromTurns([{ content: 'Nothing to change.' }]);
    const backend: ModelBackend = {
      info: () => replay.info(),
      generate: (m, t, o = {}) => {
        // A backend that had to wait for its server twice before answering.
        for (const n of [1, 2])
          o.onRetry?.({ retry: n, maxRetries: 12, delayMs: 10, elapsedMs: n * 10, reason: 'HTTP 503.' });
        return replay.generate(m, t, o);
      },
    };
    const events: LeafEvent[] = [];
    const t = await runLeaf({ sandbox, backend, task, onEvent: (e) => events.push(e) });
    expect(t.exit_reason).toBe('agent');
    expect(events.filter((e) => e.type === 'model_retry')).toEqual([
      { type: 'model_retry', turn: 1, retry: expect.objectContaining({ retry: 1, maxRetries: 12 }) },
      { type: 'model_retry', turn: 1, retry: expect.objectContaining({ retry: 2, maxRetries: 12 }) },
    ]);
  });

  it('runs a multi-turn fix with parallel tool calls, really changing files, and records it in upstream form', async () => {
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    const backend = recording(
      ReplayBackend.fromTurns([
        {
          reasoning: 'Look at the code first.',
          content: 'Let me look around.',
          tool_calls: [
            { name: 'Glob', arguments: { pattern: '**/*.js' } },
            { name: 'Read', arguments: { file_path: 'src/math.js' } },
          ],
        },
        {
          content: '',
          tool_calls: [
            { name: 'Edit', arguments: { file_path: 'src/math.js', old_string: 'a - b', new_string: 'a + b' } },
            { name: 'Write', arguments: { file_path: 'CHANGELOG.md', content: '- fix add()\n' } },
            {
              name: 'Bash',
              arguments: { command: 'sh test/math.test.sh && echo tests pass', description: 'run the test' },
            },
          ],
        },
        { content: 'Fixed add() to return a + b and noted it in CHANGELOG.md.' },
      ]),
    );
    const events: LeafEvent[] = [];
    const t = await runLeaf({ sandbox, backend, task, onEvent: (e) => events.push(e) });

    expect(t).toMatchObject({
      trajectory_format: 'leaf-function-calling',
      instance_id: 'acme__calc-7',
      seed: 42,
      exit_reason: 'agent',
      error: null,
      partial: false,
    });
    expect(t.trajectory_id).toMatch(/^[0-9a-f]{32}$/);
    expect(t.final_message).toBe('Fixed add() to return a + b and noted it in CHANGELOG.md.');
    expect(t.n_steps).toBe(3);
    expect(await readFile(path.join(repo, 'src/math.js'), 'utf8')).toContain('return a + b;');

    // Upstream's conversation: system, the task verbatim, assistant turns each followed by one tool message per call.
    expect(t.messages[0]).toEqual({ role: 'system', content: SYSTEM_PROMPT });
    expect(t.messages[1]).toEqual({
      role: 'user',
      content: 'add() subtracts\nadd(2, 3) returns -1; it should return 5.\n',
    });
    expect(t.messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'tool',
      'tool',
      'tool',
      'assistant',
    ]);
    const first = t.messages[2];
    expect(first).toEqual({
      role: 'assistant',
      content: 'Let me look around.',
      tool_calls: [
        { id: expect.any(String), type: 'function', function: { name: 'Glob', arguments: '{"pattern": "**/*.js"}' } },
        {
          id: expect.any(String),
          type: 'function',
          function: { name: 'Read', arguments: '{"file_path": "src/math.js"}' },
        },
      ],
      reasoning_content: 'Look at the code first.',
    });
    const readCall = first.role === 'assistant' ? first.tool_calls![1] : undefined;
    expect(t.messages[4]).toEqual({
      role: 'tool',
      tool_call_id: readCall!.id,
      content: 'src/math.js\n1. export function add(a, b) {\n2.   return a - b;\n3. }',
    });
    expect(t.messages[3].content).toBe('src/math.js\nsrc/util/strings.js');
    expect(t.messages[5]).toMatchObject({ role: 'assistant', content: null });
    expect(t.messages[6].content).toBe('Edited src/math.js (1 replacement).');
    expect(t.messages[7].content).toBe('Wrote CHANGELOG.md (12 bytes).');
    expect(t.messages[8].content).toBe('Exit code: 0\nSTDOUT:\ntests pass\n\nSTDERR:\n');
    expect(t.steps.map((s) => s.step)).toEqual([0, 1, 2]);
    expect(t.steps[1].observations.map((o) => o.tool)).toEqual(['Edit', 'Write', 'Bash']);
    expect(t.steps[2]).toEqual({ step: 2, assistant: t.messages[9], observations: [] });
    expect(t.context_tokens).toBeGreaterThan(500);
    expect(t.frognano.total_completion_tokens).toBeGreaterThan(0);
    expect(t.frognano.steps).toHaveLength(3);

    // Upstream's eval sampling on every call, no per-turn cap (max_tokens_per_turn: null).
    expect(backend.options).toHaveLength(3);
    for (const o of backend.options) expect(o).toMatchObject({ ...LEAF_SAMPLING, maxNewTokens: undefined });

    const { patch } = await computePatch(sandbox, base);
    expect(patch).toContain('-  return a - b;\n+  return a + b;');

    expect(events.filter((e) => e.type === 'turn_start')).toHaveLength(3);
    expect(events.filter((e) => e.type === 'tool_end')).toHaveLength(5);
    expect(events.at(-1)).toMatchObject({ type: 'finished', exitReason: 'agent', turns: 3 });
  });

  it('returns tool errors and unknown tools to the model as tool messages in upstream words', async () => {
    const backend = ReplayBackend.fromTurns([
      {
        content: '',
        tool_calls: [
          { name: 'Edit', arguments: { file_path: 'src/math.js', old_string: 'nope', new_string: 'x' } },
          { name: 'Grep', arguments: { pattern: 'add' } },
          { name: 'Read', arguments: { offset: 3 } },
        ],
      },
      { content: 'Giving up.' },
    ]);
    const t = await runLeaf({ sandbox, backend, task, sampling: { temperature: 0 } });
    expect(t.exit_reason).toBe('agent');
    expect(t.steps[0].observations.map((o) => o.observation)).toEqual([
      'ValueError: old_string was not found',
      'Unknown tool: Grep',
      'ValueError: file_path is required',
    ]);
    expect(t.frognano.steps[0].observations.map((o) => o.is_error)).toEqual([true, true, true]);
    expect(t.frognano.sampling.temperature).toBe(0);
  });

  it('runs a call whose arguments are not JSON with {} and keeps the text, as upstream', async () => {
    const replay = ReplayBackend.fromTurns([
      { content: '', tool_calls: [{ name: 'Read', arguments: {} }] },
      { content: 'ok' },
    ]);
    const backend: ModelBackend = {
      info: () => replay.info(),
      generate: async (m, tools, o) => {
        const r = await replay.generate(m, tools, o);
        for (const c of r.message.tool_calls ?? []) c.argumentsText = '{"file_path": "README.md"';
        return r;
      },
    };
    const t = await runLeaf({ sandbox, backend, task });
    expect(t.steps[0].observations[0].observation).toBe('ValueError: file_path is required');
    expect(t.steps[0].assistant.tool_calls![0].function.arguments).toBe('{"file_path": "README.md"');
    expect(t.exit_reason).toBe('agent');
  });

  it('leaves malformed tool-call markup as plain text: no extra message, the run ends, and the summary says why', async () => {
    const backend = ReplayBackend.fromTurns([
      {
        content: '',
        tool_calls: [{ name: 'Read', arguments: { file_path: 'README.md' } }],
        parse_errors: ['unknown parameter syntax <param=x>'],
      },
      { content: '<tool_call><function=Edit>', parse_errors: ['<tool_call> for Edit has no closing </function>'] },
      { content: 'never reached' },
    ]);
    const t = await runLeaf({ sandbox, backend, task });
    expect(t.exit_reason).toBe('agent');
    expect(t.n_steps).toBe(2);
    expect(t.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant']);
    expect(t.final_message).toBe('<tool_call><function=Edit>');
    expect(stepFacts(t, 1).parse_errors).toEqual(['<tool_call> for Edit has no closing </function>']);
    expect(describeExit(t)).toMatch(
      /^the model's last turn held tool-call markup that did not parse.*check the model server's tool parser$/,
    );

    const only = await runLeaf({
      sandbox,
      backend: ReplayBackend.fromTurns([{ content: '<tool_call>', parse_errors: ['empty <tool_call>'] }]),
      task,
    });
    expect(describeExit(only)).toBe(
      "every turn ended in malformed tool-call markup: check the model server's tool parser",
    );
  });

  it('stops at the turn limit', async () => {
    const t = await runLeaf({
      sandbox,
      backend: ReplayBackend.fromTurns(readForever(10)),
      task,
      limits: { maxTurns: 3 },
    });
    expect(t.exit_reason).toBe('max_turns');
    expect(t.n_steps).toBe(3);
  });

  it('ends with max_context_len once the context reaches the budget, checked after each step', async () => {
    const backend = ReplayBackend.fromTurns(readForever(50));
    const t = await runLeaf({ sandbox, backend, task, limits: { contextTokens: 1_500 } });
    expect(t.exit_reason).toBe('max_context_len');
    expect(t.context_tokens).toBeGreaterThanOrEqual(1_500);
    // The last step ran its tools before the check, as upstream's does.
    expect(t.steps.at(-1)!.observations).toHaveLength(1);
    const before = stepFacts(t, t.steps.length - 2);
    expect(before.prompt_tokens + before.completion_tokens).toBeLessThan(1_500);
    expect(t.frognano.context_budget).toBe(1_500);
  });

  it("holds the run to the model's window when it is smaller than the configured budget", async () => {
    const t = await runLeaf({ sandbox, backend: recording(ReplayBackend.fromTurns(readForever(50)), 1_500), task });
    expect(t.exit_reason).toBe('max_context_len');
    expect(t.frognano.context_budget).toBe(1_500);
  });

  it('reads a turn cut off by a length limit as upstream does, without running its half-written calls', async () => {
    const cut: ReplayTurn[] = [
      {
        content: 'Writing',
        tool_calls: [{ name: 'Write', arguments: { file_path: 'half.txt', content: 'x' } }],
        finish_reason: 'length',
      },
    ];
    const t = await runLeaf({ sandbox, backend: ReplayBackend.fromTurns(cut), task, limits: { maxNewTokens: 512 } });
    expect(t.exit_reason).toBe('max_tokens_per_turn');
    expect(stepFacts(t, 0).completion_tokens).toBe(512);
    expect(t.steps[0].observations).toEqual([]);
    expect(t.final_message).toBe('Writing');
    await expect(stat(path.join(repo, 'half.txt'))).rejects.toThrow();
    // No per-turn cap (upstream's eval): the cut can only be the context.
    const t2 = await runLeaf({ sandbox, backend: ReplayBackend.fromTurns(cut), task });
    expect(t2.exit_reason).toBe('max_context_len');
  });

  it('checks the time budget before each step, and stops whatever still runs at the hard stop', async () => {
    const slowFirst = ReplayBackend.fromTurns([{ ...readForever(1)[0], delay_ms: 400 }, ...readForever(5)]);
    const t = await runLeaf({
      sandbox,
      backend: slowFirst,
      task,
      limits: { wallTimeMs: 300, wallTimeGraceMs: 10_000 },
    });
    expect(t).toMatchObject({ exit_reason: 'max_time', n_steps: 1 });

    const started = Date.now();
    const hung = ReplayBackend.fromTurns([
      { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'sleep 30; touch late.txt', timeout: 60 } }] },
    ]);
    const t2 = await runLeaf({ sandbox, backend: hung, task, limits: { wallTimeMs: 300, wallTimeGraceMs: 400 } });
    expect(t2.exit_reason).toBe('max_time');
    expect(Date.now() - started).toBeLessThan(10_000);
    await expect(stat(path.join(repo, 'late.txt'))).rejects.toThrow();
  });

  it('stops when cancelled, before or during the run', async () => {
    const pre = new AbortController();
    pre.abort();
    const t1 = await runLeaf({ sandbox, backend: ReplayBackend.fromTurns(readForever(3)), task, signal: pre.signal });
    expect(t1).toMatchObject({ exit_reason: 'cancelled', n_steps: 0 });

    const ac = new AbortController();
    const backend = ReplayBackend.fromTurns([...readForever(1), { content: 'slow', delay_ms: 30_000 }]);
    const t2 = await runLeaf({
      sandbox,
      backend,
      task,
      signal: ac.signal,
      onEvent: (e) => {
        if (e.type === 'turn_start' && e.turn === 2) setTimeout(() => ac.abort(), 50);
      },
    });
    expect(t2.exit_reason).toBe('cancelled');
    expect(t2.n_steps).toBe(2);
  });

  it('reports a failing model as llm_query_error, and a context overflow from the server as max_context_len', async () => {
    const t = await runLeaf({
      sandbox,
      backend: ReplayBackend.fromTurns([...readForever(1), { error: 'connection refused' }]),
      task,
    });
    expect(t).toMatchObject({ exit_reason: 'llm_query_error', error: 'ModelError: connection refused', n_steps: 2 });
    expect(t.steps).toHaveLength(1);
    const t2 = await runLeaf({
      sandbox,
      backend: ReplayBackend.fromTurns([{ error: "This model's maximum context length is 65536 tokens" }]),
      task,
    });
    expect(t2).toMatchObject({ exit_reason: 'max_context_len', error: null });
    const t3 = await runLeaf({
      sandbox,
      backend: ReplayBackend.fromTurns([{ error: 'rpc error: context deadline exceeded' }]),
      task,
    });
    expect(t3.exit_reason).toBe('llm_query_error');
  });

  it('ends with tool_error when the sandbox breaks, and on a Bash timeout that is not a number (as upstream)', async () => {
    const backend = ReplayBackend.fromTurns([
      { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'echo hi' } }] },
      { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'echo again' } }] },
    ]);
    const t = await runLeaf({
      sandbox,
      backend,
      task,
      onEvent: (e) => {
        if (e.type === 'turn_end' && e.turn === 1) rmSync(repo, { recursive: true, force: true });
      },
    });
    expect(t.exit_reason).toBe('tool_error');
    expect(t.error).toMatch(/the sandbox could not run the tool/);

    const other = await makeRepo(SAMPLE_FILES);
    try {
      const t2 = await runLeaf({
        sandbox: new LocalSandbox(other),
        backend: ReplayBackend.fromTurns([
          { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'true', timeout: 'soon' } }] },
        ]),
        task,
      });
      expect(t2).toMatchObject({
        exit_reason: 'tool_error',
        error: "ValueError: could not convert string to float: 'soon'",
      });
    } finally {
      await removeDir(other);
    }
  });

  it('treats the end of a replay script as the model finishing', async () => {
    const t = await runLeaf({ sandbox, backend: ReplayBackend.fromTurns(readForever(1)), task });
    expect(t.exit_reason).toBe('agent');
    expect(t.final_message).toBe(REPLAY_EXHAUSTED_MESSAGE);
  });
});
