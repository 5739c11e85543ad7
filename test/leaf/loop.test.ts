import { rmSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { ReplayBackend, REPLAY_EXHAUSTED_MESSAGE, type ReplayTurn } from '../../src/inference/replay.js';
import type { ModelBackend } from '../../src/inference/types.js';
import type { LeafEvent } from '../../src/leaf/events.js';
import { runLeaf } from '../../src/leaf/loop.js';
import { computePatch } from '../../src/leaf/patch.js';
import { SYSTEM_PROMPT } from '../../src/leaf/prompt.js';
import { LocalSandbox } from '../../src/sandbox/local.js';
import { git, makeRepo, removeDir, SAMPLE_FILES, isolateHome } from './helpers.js';

isolateHome();

const task = { title: 'add() subtracts', body: 'add(2, 3) returns -1; it should return 5.', repo: 'acme/calc', issueNumber: 7 };

/** Endless tool calling: every turn reads a file. */
const readForever = (n: number): ReplayTurn[] =>
  Array.from({ length: n }, () => ({ content: '', tool_calls: [{ name: 'Read', arguments: { file_path: 'README.md' } }] }));

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

  it('runs a multi-turn fix with parallel tool calls, really changing files, until the model answers', async () => {
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    const backend = ReplayBackend.fromTurns([
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
          { name: 'Bash', arguments: { command: 'sh test/math.test.sh && echo tests pass', description: 'run the test' } },
        ],
      },
      { content: 'Fixed add() to return a + b and noted it in CHANGELOG.md.' },
    ]);
    const events: LeafEvent[] = [];
    const t = await runLeaf({ sandbox, backend, task, onEvent: (e) => events.push(e) });

    expect(t.exit_reason).toBe('agent');
    expect(t.error).toBeNull();
    expect(t.final_message).toBe('Fixed add() to return a + b and noted it in CHANGELOG.md.');
    expect(t.n_steps).toBe(3);
    expect(await readFile(path.join(repo, 'src/math.js'), 'utf8')).toContain('return a + b;');

    // The conversation: system, task, then assistant turns each followed by one tool message per call, in order.
    expect(t.messages[0]).toEqual({ role: 'system', content: SYSTEM_PROMPT });
    expect(t.messages[1].role).toBe('user');
    expect(t.messages[1].content).toContain('Repository: acme/calc\nIssue #7: add() subtracts');
    expect(t.messages[1].content).toContain('Top-level files: README.md, package.json, src/, test/');
    expect(t.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'assistant', 'tool', 'tool', 'tool', 'assistant']);
    const call = t.messages[2].tool_calls![1];
    expect(t.messages[4]).toMatchObject({ role: 'tool', tool_call_id: call.id, name: 'Read' });
    expect(t.messages[3].content).toBe('src/math.js\nsrc/util/strings.js');
    expect(t.messages[4].content).toBe('src/math.js\n1. export function add(a, b) {\n2.   return a - b;\n3. }');
    expect(t.messages[6].content).toBe('Edited src/math.js (1 replacement).');
    expect(t.messages[7].content).toBe('Wrote CHANGELOG.md (12 bytes).');
    expect(t.messages[8].content).toBe('Exit code: 0\nSTDOUT:\ntests pass\n\nSTDERR:\n');
    expect(t.messages[2].reasoning).toBe('Look at the code first.');
    expect(t.steps[1].observations.map((o) => o.tool)).toEqual(['Edit', 'Write', 'Bash']);
    expect(t.context_tokens).toBeGreaterThan(500);
    expect(t.total_completion_tokens).toBeGreaterThan(0);

    // The patch is the real git diff, new file included.
    const { patch, changedFiles } = await computePatch(sandbox, base);
    expect(patch).toContain('-  return a - b;\n+  return a + b;');
    expect(patch).toContain('new file mode 100644');
    expect(changedFiles).toEqual([
      { path: 'CHANGELOG.md', additions: 1, deletions: 0, binary: false },
      { path: 'src/math.js', additions: 1, deletions: 1, binary: false },
    ]);

    // Progress events: every turn and every tool call, then finished.
    expect(events.filter((e) => e.type === 'turn_start')).toHaveLength(3);
    expect(events.filter((e) => e.type === 'tool_end')).toHaveLength(5);
    expect(events.find((e) => e.type === 'tool_start' && e.name === 'Bash')).toMatchObject({ summary: 'sh test/math.test.sh && echo tests pass' });
    expect(events.at(-1)).toMatchObject({ type: 'finished', exitReason: 'agent', turns: 3 });
  });

  it('returns tool errors, unknown tools and bad arguments to the model as text and keeps going', async () => {
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
    const t = await runLeaf({ sandbox, backend, task });
    expect(t.exit_reason).toBe('agent');
    expect(t.steps[0].observations.map((o) => [o.is_error, o.observation])).toEqual([
      [true, 'ValueError: old_string was not found'],
      [true, 'Unknown tool: Grep. Available tools: Read, Write, Edit, Glob, Bash.'],
      [true, 'ValueError: invalid arguments for Read: file_path is required'],
    ]);
  });

  it('feeds parse errors back to the model as a message and counts the turn', async () => {
    const backend = ReplayBackend.fromTurns([
      { content: '', parse_errors: ['<tool_call> for Edit has no closing </function>'] },
      {
        content: '',
        tool_calls: [{ name: 'Read', arguments: { file_path: 'README.md' } }],
        parse_errors: ['unknown parameter syntax <param=x>'],
      },
      { content: 'done' },
    ]);
    const t = await runLeaf({ sandbox, backend, task });
    expect(t.exit_reason).toBe('agent');
    expect(t.n_steps).toBe(3);
    expect(t.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'tool', 'user', 'assistant']);
    expect(t.messages[3].content).toBe(
      'Your last message contained a tool call that could not be parsed, so it was not run:\n' +
        '- <tool_call> for Edit has no closing </function>\nSend the tool call again in the correct format.',
    );
    expect(t.messages[6].content).toContain('The other tool calls were run; their results are above.');
    expect(t.steps[0].parse_errors).toEqual(['<tool_call> for Edit has no closing </function>']);
  });

  it('stops at the turn limit', async () => {
    const t = await runLeaf({ sandbox, backend: ReplayBackend.fromTurns(readForever(10)), task, limits: { maxTurns: 3 } });
    expect(t.exit_reason).toBe('max_turns');
    expect(t.n_steps).toBe(3);
  });

  it('stops before a turn whose prompt plus maxNewTokens would not fit the context (backend count)', async () => {
    const backend = ReplayBackend.fromTurns(readForever(50));
    // Each Read of README adds ~70 tokens; the task prompt and tools are ~1,000.
    const t = await runLeaf({ sandbox, backend, task, limits: { contextTokens: 2_500, maxNewTokens: 1_000 } });
    expect(t.exit_reason).toBe('max_context_len');
    expect(t.n_steps).toBeGreaterThan(2);
    const lastPrompt = await backend.countTokens(t.messages, t.tools);
    expect(lastPrompt + 1_000).toBeGreaterThan(2_500);
    expect(t.steps.at(-1)!.prompt_tokens + 1_000).toBeLessThanOrEqual(2_500);
  });

  it('estimates the context from the last turn when the backend cannot count tokens', async () => {
    const replay = ReplayBackend.fromTurns(readForever(50));
    const noCount: ModelBackend = { info: () => replay.info(), generate: (m, tools, o) => replay.generate(m, tools, o) };
    const t = await runLeaf({ sandbox, backend: noCount, task, limits: { contextTokens: 2_500, maxNewTokens: 1_000 } });
    expect(t.exit_reason).toBe('max_context_len');
    expect(t.n_steps).toBeGreaterThan(2);
    expect(t.n_steps).toBeLessThan(50);
  });

  it('ends on a turn cut off at the per-turn token limit without running its half-written calls', async () => {
    const backend = ReplayBackend.fromTurns([
      { content: 'Writing', tool_calls: [{ name: 'Write', arguments: { file_path: 'half.txt', content: 'x' } }], finish_reason: 'length' },
    ]);
    const t = await runLeaf({ sandbox, backend, task, limits: { maxNewTokens: 512 } });
    expect(t.exit_reason).toBe('max_tokens_per_turn');
    expect(t.steps[0].completion_tokens).toBe(512);
    expect(t.steps[0].observations).toEqual([]);
    await expect(stat(path.join(repo, 'half.txt'))).rejects.toThrow();
  });

  it('stops at the wall-time limit while the model is generating', async () => {
    const started = Date.now();
    const backend = ReplayBackend.fromTurns([{ content: 'slow', delay_ms: 30_000 }]);
    const t = await runLeaf({ sandbox, backend, task, limits: { wallTimeMs: 300 } });
    expect(t.exit_reason).toBe('max_time');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('stops at the wall-time limit while a command runs, killing it', async () => {
    const started = Date.now();
    const backend = ReplayBackend.fromTurns([
      { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'sleep 30; touch late.txt', timeout: 60 } }] },
    ]);
    const t = await runLeaf({ sandbox, backend, task, limits: { wallTimeMs: 700 } });
    expect(t.exit_reason).toBe('max_time');
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
    expect(t2.n_steps).toBe(1);
  });

  it('reports a failing model as llm_query_error, and a context overflow from the server as max_context_len', async () => {
    const t = await runLeaf({ sandbox, backend: ReplayBackend.fromTurns([...readForever(1), { error: 'connection refused' }]), task });
    expect(t).toMatchObject({ exit_reason: 'llm_query_error', error: 'ModelError: connection refused', n_steps: 1 });
    const t2 = await runLeaf({
      sandbox,
      backend: ReplayBackend.fromTurns([{ error: "This model's maximum context length is 131072 tokens" }]),
      task,
    });
    expect(t2.exit_reason).toBe('max_context_len');
    const t3 = await runLeaf({ sandbox, backend: ReplayBackend.fromTurns([{ error: 'rpc error: context deadline exceeded' }]), task });
    expect(t3.exit_reason).toBe('llm_query_error');
  });

  it('ends with tool_error when the sandbox breaks', async () => {
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
    expect(t.error).toMatch(/^Bash: the sandbox could not run the command/);
  });

  it('ends with tool_error when a file tool gets no answer from the sandbox', async () => {
    // A sandbox whose file API hangs (as a wedged container's would); everything else is the real one.
    const wedged = Object.create(sandbox) as LocalSandbox;
    wedged.readFile = () => new Promise<Buffer>(() => undefined);
    wedged.listFiles = () => new Promise(() => undefined);
    const backend = ReplayBackend.fromTurns([{ content: '', tool_calls: [{ name: 'Read', arguments: { file_path: 'README.md' } }] }]);
    const started = Date.now();
    const t = await runLeaf({ sandbox: wedged, backend, task, limits: { fileToolTimeoutMs: 300 } });
    expect(t.exit_reason).toBe('tool_error');
    expect(t.error).toBe('Read: Read got no answer from the sandbox within 0.3s');
    expect(t.messages[1].content).not.toContain('Top-level files'); // the listing gave up too
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('treats the end of a replay script as the model finishing', async () => {
    const t = await runLeaf({ sandbox, backend: ReplayBackend.fromTurns(readForever(1)), task });
    expect(t.exit_reason).toBe('agent');
    expect(t.final_message).toBe(REPLAY_EXHAUSTED_MESSAGE);
  });
});
