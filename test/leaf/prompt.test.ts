import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTokenizer, renderPrompt } from '../../src/inference/onnx/tokenizer.js';
import type { ChatMessage } from '../../src/inference/types.js';
import { renderTaskMessage, SYSTEM_PROMPT, TASK_BODY_MAX_CHARS, TASK_SECTION_ORDER } from '../../src/leaf/prompt.js';
import { TASK_SECTION_KINDS, type LeafTask } from '../../src/leaf/trajectory.js';
import { LEAF_TOOLS } from '../../src/leaf/toolSpecs.js';
import { buildTinyModel } from '../support/tinyModel/buildTinyModel.js';
import { SAMPLE_PROMPT_TASK } from '../fixtures/qwen3.5-chat-template/sampleTask.js';
import { removeDir, tempDir } from './helpers.js';

/**
 * The first prompt FrogNano sees: upstream Leaf's system prompt and tool schemas (recorded from upstream's
 * tools.py as data), the task message, rendered through the official Qwen3.5 chat template by the onnx backend's
 * renderer, byte for byte what python transformers' apply_chat_template renders (recorded by record.py).
 */
const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'qwen3.5-chat-template');
const read = (name: string) => readFile(path.join(fixtures, name), 'utf8');
/** The official template's one copy is in the model fixture directory, where transformers 5 saves it. */
const OFFICIAL_TEMPLATE = path.join(fixtures, '..', 'qwen35-tiny', 'chat_template.jinja');

/** The tiny model built in `dir`, its tokenizer with the official Qwen3.5 chat template in place of its own. */
async function officialTemplateTokenizer(dir: string) {
  await buildTinyModel(dir);
  const configFile = path.join(dir, 'tokenizer_config.json');
  const config = JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;
  await writeFile(configFile, JSON.stringify({ ...config, chat_template: await readFile(OFFICIAL_TEMPLATE, 'utf8') }));
  return loadTokenizer(dir);
}

describe('the first prompt', () => {
  it("has upstream Leaf's system prompt and tool schemas, key order included", async () => {
    const upstream = JSON.parse(await read('upstream-leaf.json')) as { system_prompt: string; tools: unknown };
    expect(SYSTEM_PROMPT).toBe(upstream.system_prompt);
    expect(JSON.stringify(LEAF_TOOLS)).toBe(JSON.stringify(upstream.tools));
  });

  it('is built from the issue as recorded', async () => {
    const input = JSON.parse(await read('first-prompt.input.json')) as { messages: ChatMessage[]; tools: unknown };
    const { task } = SAMPLE_PROMPT_TASK;
    expect([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: renderTaskMessage(task) },
    ]).toEqual(input.messages);
    expect(JSON.stringify(input.tools)).toBe(JSON.stringify(LEAF_TOOLS));
  });

  it("renders through the Qwen3.5 chat template exactly as transformers' apply_chat_template does", async () => {
    const dir = await tempDir('fn-leaf-template-');
    try {
      const tokenizer = await officialTemplateTokenizer(dir);
      const input = JSON.parse(await read('first-prompt.input.json')) as { messages: ChatMessage[] };
      expect(renderPrompt(tokenizer, input.messages, LEAF_TOOLS)).toBe(await read('first-prompt.txt'));
    } finally {
      await removeDir(dir);
    }
  });
});

/** Issues and the first message and prompt recorded for them from upstream's rules by fixtures/task-message/record.py. */
const taskFixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'task-message');
interface TaskCase {
  name: string;
  task: LeafTask;
  notes?: string[];
}
interface TaskGolden {
  name: string;
  message: string;
  prompt: string;
}

describe('the first prompt for each recorded issue', () => {
  let cases: TaskCase[];
  let goldens: Map<string, TaskGolden>;
  let dir: string;
  let tokenizer: Awaited<ReturnType<typeof loadTokenizer>>;
  beforeAll(async () => {
    cases = JSON.parse(await readFile(path.join(taskFixtures, 'cases.json'), 'utf8')) as TaskCase[];
    const list = JSON.parse(await readFile(path.join(taskFixtures, 'goldens.json'), 'utf8')) as TaskGolden[];
    goldens = new Map(list.map((g) => [g.name, g]));
    dir = await tempDir('fn-leaf-task-template-');
    tokenizer = await officialTemplateTokenizer(dir);
  });
  afterAll(async () => {
    if (dir) await removeDir(dir);
  });

  it('covers the recorded shapes', () => {
    expect(cases.map((c) => c.name)).toEqual([
      'plain',
      'indented code block',
      'whole statement indented',
      'crlf',
      'trailing spaces',
      'tabs',
      'empty body',
      'title only',
      'with context',
    ]);
    expect([...goldens.keys()]).toEqual(cases.map((c) => c.name));
  });

  it('sends the message upstream sent, and the Qwen3.5 template renders the prompt upstream rendered', () => {
    for (const c of cases) {
      const golden = goldens.get(c.name)!;
      const message = renderTaskMessage(c.task, { notes: c.notes });
      expect({ name: c.name, message }).toEqual({ name: c.name, message: golden.message });
      const messages: ChatMessage[] = [
        { role: 'system', content: SYSTEM_PROMPT },
        { role: 'user', content: message },
      ];
      const prompt = renderPrompt(tokenizer, messages, LEAF_TOOLS);
      expect({ name: c.name, prompt }).toEqual({ name: c.name, prompt: golden.prompt });
    }
  });
});

describe('renderTaskMessage', () => {
  it("is Harbor's SWE-bench instruction: dedent(title + body).strip() and a newline, nothing else", () => {
    expect(renderTaskMessage({ title: 'Crash on start', body: '' })).toBe('Crash on start\n');
    expect(renderTaskMessage({ title: 'T', body: ' B \n', repo: 'o/r', issueNumber: 3 })).toBe('T\n B\n');
    const blankAdditions: LeafTask = { title: '  T', body: '  B\n    C', context: [{ heading: 'H', text: ' \n' }] };
    expect(renderTaskMessage(blankAdditions, { notes: [' '] })).toBe('T\nB\n  C\n');
  });

  it("puts the bot's additions after the statement, in one delimited part, in the fixed order", () => {
    const task: LeafTask = {
      title: 'T',
      body: 'B',
      context: [
        { heading: 'Unsorted', text: 'u' },
        { heading: 'CI', text: 'c', kind: 'ci' },
        { heading: 'Feedback', text: 'f', kind: 'feedback' },
        { heading: 'Instructions', text: 'i', kind: 'instructions' },
        { heading: 'Discussion', text: 'd', kind: 'discussion' },
        { heading: 'Guidance', text: 'g', kind: 'guidance' },
      ],
    };
    expect(renderTaskMessage(task, { notes: ['Note: setup failed.', 'Second note.'] })).toBe(
      'T\nB\n\n---\n\n# Additional context from frognano-bot\n\n' +
        '## Guidance\n\ng\n\n## Discussion\n\nd\n\n## Instructions\n\ni\n\n## Feedback\n\nf\n\n## CI\n\nc\n\n' +
        '## Unsorted\n\nu\n\n## Notes from this run\n\nNote: setup failed.\n\nSecond note.\n',
    );
    expect(renderTaskMessage({ title: 'T', body: '' }, { notes: ['Note: setup failed.'] })).toBe(
      'T\n\n---\n\n# Additional context from frognano-bot\n\n## Notes from this run\n\nNote: setup failed.\n',
    );
  });

  it('orders every section kind', () => {
    expect([...TASK_SECTION_ORDER].sort()).toEqual([...TASK_SECTION_KINDS].sort());
  });

  it('caps a huge issue body, keeping its start and end', () => {
    const body = `START${'x'.repeat(100_000)}END`;
    const text = renderTaskMessage({ title: 'T', body });
    expect(text.length).toBeLessThan(TASK_BODY_MAX_CHARS + 200);
    expect(text).toContain('START');
    expect(text).toContain('END');
    expect(text).toMatch(/chars elided/);
  });
});
