import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTokenizer, renderPrompt } from '../../src/inference/onnx/tokenizer.js';
import type { ChatMessage } from '../../src/inference/types.js';
import { renderTaskMessage, SYSTEM_PROMPT, TASK_BODY_MAX_CHARS } from '../../src/leaf/prompt.js';
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

describe('the first prompt', () => {
  it("has upstream Leaf's system prompt and tool schemas, key order included", async () => {
    const upstream = JSON.parse(await read('upstream-leaf.json')) as { system_prompt: string; tools: unknown };
    expect(SYSTEM_PROMPT).toBe(upstream.system_prompt);
    expect(JSON.stringify(LEAF_TOOLS)).toBe(JSON.stringify(upstream.tools));
  });

  it('is built from the issue as recorded', async () => {
    const input = JSON.parse(await read('first-prompt.input.json')) as { messages: ChatMessage[]; tools: unknown };
    const { task, baseCommit } = SAMPLE_PROMPT_TASK;
    expect([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: renderTaskMessage(task, { baseCommit }) },
    ]).toEqual(input.messages);
    expect(JSON.stringify(input.tools)).toBe(JSON.stringify(LEAF_TOOLS));
  });

  it("renders through the Qwen3.5 chat template exactly as transformers' apply_chat_template does", async () => {
    const dir = await tempDir('fn-leaf-template-');
    try {
      await buildTinyModel(dir);
      const configFile = path.join(dir, 'tokenizer_config.json');
      const config = JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;
      await writeFile(configFile, JSON.stringify({ ...config, chat_template: await readFile(OFFICIAL_TEMPLATE, 'utf8') }));
      const tokenizer = await loadTokenizer(dir);
      const input = JSON.parse(await read('first-prompt.input.json')) as { messages: ChatMessage[] };
      expect(renderPrompt(tokenizer, input.messages, LEAF_TOOLS)).toBe(await read('first-prompt.txt'));
    } finally {
      await removeDir(dir);
    }
  });
});

describe('renderTaskMessage', () => {
  it("is Harbor's SWE-bench instruction shape, with only the lines the bot knows", () => {
    expect(renderTaskMessage({ title: 'Crash on start', body: '' })).toBe('# Task\n\nCrash on start\n');
    expect(renderTaskMessage({ title: 'T', body: ' B \n', repo: 'o/r' }, { notes: ['Note: setup failed.'] })).toBe(
      '# Task\n\nT\nB\n\nNote: setup failed.\n\n---\n\n**Repo:** `o/r`\n**Instance ID:** `o__r`\n',
    );
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
