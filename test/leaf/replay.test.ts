import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ReplayBackend, REPLAY_EXHAUSTED_MESSAGE, renderRawTurn } from '../../src/inference/replay.js';
import { ModelError, type ChatMessage } from '../../src/inference/types.js';
import { LEAF_TOOLS } from '../../src/leaf/tools.js';
import { runLeaf } from '../../src/leaf/loop.js';
import { serializeTrajectory } from '../../src/leaf/trajectory.js';
import { LocalSandbox } from '../../src/sandbox/local.js';
import { isolateHome, makeRepo, removeDir, SAMPLE_FILES, tempDir } from './helpers.js';

isolateHome();

const prompt: ChatMessage[] = [
  { role: 'system', content: 'You are an agent.' },
  { role: 'user', content: 'Fix the bug in src/a.ts. '.repeat(40) },
];

describe('ReplayBackend', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await tempDir('fn-replay-');
  });
  afterEach(() => removeDir(dir));

  it('replays scripted turns in order, with ids, reasoning and realistic token counts', async () => {
    const b = ReplayBackend.fromTurns([
      {
        reasoning: 'check first',
        content: 'Reading.',
        tool_calls: [{ name: 'Read', arguments: { file_path: 'src/a.ts' } }],
      },
      { content: 'Done.' },
    ]);
    expect(b.info()).toEqual({ backend: 'replay', model: 'replay:scripted' });
    const streamed: string[] = [];
    const r1 = await b.generate(prompt, LEAF_TOOLS, { onToken: (d) => streamed.push(d) });
    expect(r1.message).toEqual({
      role: 'assistant',
      content: 'Reading.',
      reasoning: 'check first',
      tool_calls: [{ id: 'replay_0_0', name: 'Read', arguments: { file_path: 'src/a.ts' } }],
    });
    expect(r1.finishReason).toBe('tool_calls');
    expect(r1.rawText).toBe(
      '<think>\ncheck first\n</think>\n\nReading.\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/a.ts\n</parameter>\n</function>\n</tool_call>',
    );
    expect(streamed.join('')).toBe(r1.rawText);
    // bytes/4 of the prompt as JSON plus the tool specs: ~250 tokens of task text plus ~1,000 of tools
    const expected =
      Math.ceil(Buffer.byteLength(JSON.stringify(prompt)) / 4) +
      Math.ceil(Buffer.byteLength(JSON.stringify(LEAF_TOOLS)) / 4);
    expect(r1.promptTokens).toBe(expected);
    expect(await b.countTokens(prompt, LEAF_TOOLS)).toBe(expected);
    expect(r1.completionTokens).toBe(Math.ceil(Buffer.byteLength(r1.rawText!) / 4));
    expect(r1.prefillTokens).toBe(r1.promptTokens);

    const next = [
      ...prompt,
      r1.message,
      { role: 'tool' as const, tool_call_id: 'replay_0_0', content: 'src/a.ts\n1. x' },
    ];
    const r2 = await b.generate(next, LEAF_TOOLS);
    expect(r2.message).toEqual({ role: 'assistant', content: 'Done.' });
    expect(r2.finishReason).toBe('stop');
    expect(r2.promptTokens).toBeGreaterThan(r1.promptTokens);
    // Only what was added since the last turn had to be computed.
    expect(r2.prefillTokens).toBe(r2.promptTokens - r1.promptTokens - r1.completionTokens);
    expect(b.remaining).toBe(0);

    const r3 = await b.generate(next, LEAF_TOOLS);
    expect(r3).toMatchObject({ finishReason: 'stop', message: { content: REPLAY_EXHAUSTED_MESSAGE } });
    expect(r3.message.tool_calls).toBeUndefined();
  });

  it('scripts failures: model errors, parse errors, cut-off turns and slow turns that honour cancellation', async () => {
    const b = ReplayBackend.fromTurns([
      { error: 'upstream 502' },
      { content: '', parse_errors: ['bad <tool_call>'] },
      { content: 'partial', finish_reason: 'length' },
      { content: 'slow', delay_ms: 30_000 },
    ]);
    await expect(b.generate(prompt, [])).rejects.toEqual(new ModelError('upstream 502'));
    expect((await b.generate(prompt, [])).parseErrors).toEqual(['bad <tool_call>']);
    expect(await b.generate(prompt, [], { maxNewTokens: 8192 })).toMatchObject({
      finishReason: 'length',
      completionTokens: 8192,
    });
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 50);
    expect((await b.generate(prompt, [], { signal: ac.signal })).finishReason).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('loads {turns: [...]} files and OpenAI-style trajectories (arguments as JSON strings)', async () => {
    const turnsFile = path.join(dir, 'turns.json');
    await writeFile(
      turnsFile,
      JSON.stringify({ turns: [{ content: 'hi', tool_calls: [{ name: 'Glob', arguments: { pattern: '*' } }] }] }),
    );
    const b1 = await ReplayBackend.fromFile(turnsFile);
    expect(b1.info().model).toBe('replay:turns.json');
    expect((await b1.generate(prompt, [])).message.tool_calls).toEqual([
      { id: 'replay_0_0', name: 'Glob', arguments: { pattern: '*' } },
    ]);

    const pyFile = path.join(dir, 'py-trajectory.json');
    await writeFile(
      pyFile,
      JSON.stringify({
        trajectory_format: 'leaf-function-calling',
        messages: [
          { role: 'system', content: 'sys' },
          { role: 'user', content: 'task' },
          {
            role: 'assistant',
            content: null,
            reasoning_content: 'hmm',
            tool_calls: [
              { id: 'call_x', type: 'function', function: { name: 'Bash', arguments: '{"command": "ls"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_x', content: 'Exit code: 0' },
          { role: 'assistant', content: 'done' },
        ],
      }),
    );
    const b2 = await ReplayBackend.fromFile(pyFile);
    const r = await b2.generate(prompt, []);
    expect(r.message).toEqual({
      role: 'assistant',
      content: '',
      reasoning: 'hmm',
      tool_calls: [{ id: 'call_x', name: 'Bash', arguments: { command: 'ls' }, argumentsText: '{"command": "ls"}' }],
    });
    expect((await b2.generate(prompt, [])).message.content).toBe('done');
  });

  it('says clearly what is wrong with a bad file', async () => {
    await expect(ReplayBackend.fromFile(path.join(dir, 'missing.json'))).rejects.toThrow(
      /cannot read replay file .*missing.json: ENOENT/,
    );
    const bad = path.join(dir, 'bad.json');
    await writeFile(bad, '{"turns": [');
    await expect(ReplayBackend.fromFile(bad)).rejects.toThrow(/is not valid JSON/);
    await writeFile(bad, JSON.stringify({ turns: [{ tool_calls: [{ name: 'Read', arguments: '{not json' }] }] }));
    await expect(ReplayBackend.fromFile(bad)).rejects.toThrow(/not a replay script: turns.0.tool_calls.0/);
    await writeFile(bad, JSON.stringify({ hello: 'world' }));
    await expect(ReplayBackend.fromFile(bad)).rejects.toThrow(/expected \{"turns": \[...\]\} or a trajectory/);
    expect(() => ReplayBackend.fromTurns([{ content: 'x', delay_ms: -1 }])).toThrow(/delay_ms/);
  });

  it('replays a stored trajectory into the same conversation, arguments text included', async () => {
    const repo = await makeRepo(SAMPLE_FILES);
    try {
      const first = await runLeaf({
        sandbox: new LocalSandbox(repo),
        backend: ReplayBackend.fromTurns([
          {
            reasoning: 'look',
            content: '',
            tool_calls: [
              { name: 'Read', arguments: { file_path: 'README.md', limit: 1 } },
              { name: 'Glob', arguments: { pattern: '*.md' } },
            ],
          },
          { content: 'done' },
        ]),
        task: { title: 'T', body: 'B' },
      });
      const file = path.join(dir, 'trajectory.json');
      await writeFile(file, serializeTrajectory(first));
      const again = await runLeaf({
        sandbox: new LocalSandbox(repo),
        backend: await ReplayBackend.fromFile(file),
        task: { title: 'T', body: 'B' },
      });
      expect(again.messages).toEqual(first.messages);
      expect(again.exit_reason).toBe('agent');
    } finally {
      await removeDir(repo);
    }
  });

  it('renders non-string arguments as JSON in the raw turn', () => {
    expect(
      renderRawTurn({ content: '', tool_calls: [{ name: 'Read', arguments: { file_path: 'a', offset: 3 } }] }),
    ).toBe(
      '<tool_call>\n<function=Read>\n<parameter=file_path>\na\n</parameter>\n<parameter=offset>\n3\n</parameter>\n</function>\n</tool_call>',
    );
  });
});
