/**
 * The onnx backend on a real-architecture Qwen3.5 export: test/fixtures/qwen35-tiny, built by
 * scripts/build-qwen35-fixture.py from transformers' Qwen3_5ForConditionalGeneration (random weights) in the
 * transformers.js hub layout, with PyTorch's logits and greedy ids and transformers' rendered prompts.
 * Covers: logits and greedy tokens vs PyTorch, the official chat template, prefix reuse across a tool loop and a
 * user follow-up, dtype variants, template sources, and the errors for directories that do not fit.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OnnxBackend } from '../../src/inference/onnx/backend.js';
import { decodeLoop } from '../../src/inference/onnx/decode.js';
import { createRng } from '../../src/inference/onnx/sampling.js';
import { encodePrompt, renderPrompt } from '../../src/inference/onnx/tokenizer.js';
import { ContextOverflowError, ModelError, type ChatMessage, type ToolSpec } from '../../src/inference/types.js';

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/qwen35-tiny');

interface HfMessage {
  role: ChatMessage['role'];
  content: string;
  reasoning_content?: string;
  tool_calls?: { id: string; function: { name: string; arguments: Record<string, unknown> } }[];
  tool_call_id?: string;
  name?: string;
}

interface Reference {
  tools: ToolSpec[];
  conversations: Record<'first' | 'tool_loop' | 'follow_up', HfMessage[]>;
  prompts: Record<string, string>;
  prompt_ids: Record<string, number[]>;
  first_logits: number[];
  greedy_ids: number[];
}

let ref: Reference;
let root: string;
let backend: OnnxBackend;

/** transformers' message shape -> this project's. */
function toChat(messages: HfMessage[]): ChatMessage[] {
  return messages.map((m) => {
    const out: ChatMessage = { role: m.role, content: m.content };
    if (m.reasoning_content !== undefined) out.reasoning = m.reasoning_content;
    if (m.tool_calls)
      out.tool_calls = m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    if (m.name !== undefined) out.name = m.name;
    return out;
  });
}

const conv = (name: keyof Reference['conversations']) => toChat(ref.conversations[name]);

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** A copy of the fixture, changed by `mutate`. */
async function variant(name: string, mutate: (dir: string) => Promise<void>): Promise<string> {
  const dir = path.join(root, name);
  await cp(FIXTURE, dir, { recursive: true });
  await mutate(dir);
  return dir;
}

async function loadError(dir: string, opts: Parameters<typeof OnnxBackend.load>[1] = {}): Promise<Error> {
  const err = await OnnxBackend.load(dir, opts).then(
    async (b) => {
      await b.close();
      return undefined;
    },
    (e: unknown) => e as Error,
  );
  expect(err).toBeInstanceOf(ModelError);
  return err!;
}

beforeAll(async () => {
  ref = JSON.parse(await readFile(path.join(FIXTURE, 'reference.json'), 'utf8')) as Reference;
  root = await mkdtemp(path.join(os.tmpdir(), 'onnx-qwen35-'));
  backend = await OnnxBackend.load(FIXTURE);
});
afterAll(async () => {
  await backend?.close();
  await rm(root, { recursive: true, force: true });
});

describe('against PyTorch and transformers', () => {
  test('the hub layout loads: decoder_model_merged + embed_tokens, M-RoPE positions, linear-attention states', () => {
    expect(backend.modelReport()).toEqual({
      decoder: 'onnx/decoder_model_merged.onnx',
      embed: 'onnx/embed_tokens.onnx',
      dtype: 'fp32',
      chatTemplate: 'chat_template.jinja',
      prefillChunkSize: 512,
    });
    const inputs = backend.decoder.session.inputNames;
    expect(inputs).toEqual(
      expect.arrayContaining([
        'inputs_embeds',
        'position_ids',
        'past_conv.0',
        'past_recurrent.2',
        'past_key_values.3.key',
      ]),
    );
    expect(backend.decoder.rewindable).toBe(false);
  });

  test('prompts and token ids are those of transformers apply_chat_template with the official Qwen3.5 template', async () => {
    for (const name of ['first', 'tool_loop', 'follow_up'] as const) {
      const prompt = backend.renderPrompt(conv(name), ref.tools, true);
      expect(prompt).toBe(ref.prompts[name]);
      expect(encodePrompt(backend.tokenizer, prompt)).toEqual(ref.prompt_ids[name]);
    }
    expect(backend.renderPrompt(conv('first'), ref.tools, false)).toBe(ref.prompts.first_no_thinking);
    // The Leaf prompt conformance test (test/leaf/prompt.test.ts) renders through this same file.
    expect(backend.renderPrompt(conv('first'), [], undefined)).toBe(ref.prompts.first_no_tools);
    // The template's own behaviour that prefix reuse has to live with: a follow-up drops earlier <think> blocks.
    expect(ref.prompts.tool_loop).toContain('<think>\nThe test runner output will show the failure.\n</think>');
    expect(ref.prompts.follow_up).not.toContain('The test runner output will show the failure.');
  });

  test('prefill logits are within 5e-5 of PyTorch, in one run and in chunks', async () => {
    const ids = ref.prompt_ids.first!;
    const whole = await backend.decoder.forward(ids, backend.decoder.newState());
    expect(maxAbsDiff(whole.logits, ref.first_logits)).toBeLessThan(5e-5);
    const chunked = await OnnxBackend.load(FIXTURE, { prefillChunkSize: 37 });
    try {
      const parts = await chunked.decoder.forward(ids, chunked.decoder.newState());
      expect(maxAbsDiff(parts.logits, ref.first_logits)).toBeLessThan(5e-5);
    } finally {
      await chunked.close();
    }
  });

  test("the project's decode loop gives PyTorch's 30 greedy tokens, and generate() their text", async () => {
    const ids = ref.prompt_ids.first!;
    const pre = await backend.decoder.forward(ids, backend.decoder.newState());
    const out = await decodeLoop(backend.decoder, pre.logits, pre.state, {
      maxNewTokens: 30,
      eosTokenIds: new Set(),
      rng: createRng(0),
    });
    expect(out.tokens).toEqual(ref.greedy_ids);
    const r = await backend.generate(conv('first'), ref.tools, { maxNewTokens: 30, temperature: 0 });
    expect(r.promptTokens).toBe(ids.length);
    expect(r.completionTokens).toBe(30);
    expect(r.rawText).toBe(backend.tokenizer.decode(ref.greedy_ids, { skip_special_tokens: false }));
  });

  test('Leaf sampling settings: a seed reproduces the text, other seeds differ, thinking off reaches the template', async () => {
    const leaf = { temperature: 0.6, topP: 0.95, topK: 20, minP: 0, repetitionPenalty: 1.0, maxNewTokens: 12 };
    const text = async (seed: number) => (await backend.generate(conv('first'), ref.tools, { ...leaf, seed })).rawText;
    const a = await text(7);
    expect(await text(7)).toBe(a);
    expect([await text(8), await text(9), await text(10)].some((t) => t !== a)).toBe(true);

    const off = await backend.generate(conv('first'), ref.tools, { ...leaf, seed: 7, enableThinking: false });
    expect(off.promptTokens).toBe(ref.prompt_ids.first_no_thinking!.length);
    expect(await backend.countTokens(conv('first'), ref.tools)).toBe(ref.prompt_ids.first_no_thinking!.length);
    await backend.generate(conv('first'), ref.tools, { ...leaf, maxNewTokens: 1, enableThinking: true });
    expect(await backend.countTokens(conv('first'), ref.tools)).toBe(ref.prompt_ids.first!.length);
  });
});

test('a prompt past the context length is a ContextOverflowError with its size', async () => {
  const small = await OnnxBackend.load(FIXTURE, { contextLength: 100 });
  try {
    const err = await small.generate(conv('first'), ref.tools).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContextOverflowError);
    expect(err).toMatchObject({ promptTokens: ref.prompt_ids.first!.length, contextLength: 100 });
  } finally {
    await small.close();
  }
});

describe('prefix reuse', () => {
  const OPTS = { maxNewTokens: 8, temperature: 0 };

  test('a tool loop and then a user follow-up reuse cached states and generate what a fresh run generates', async () => {
    const cached = await OnnxBackend.load(FIXTURE);
    const fresh = await OnnxBackend.load(FIXTURE, { prefixCache: false });
    try {
      const first = await cached.generate(conv('first'), ref.tools, OPTS);
      expect(first.prefillTokens).toBe(first.promptTokens);

      const loop = await cached.generate(conv('tool_loop'), ref.tools, OPTS);
      const loopFresh = await fresh.generate(conv('tool_loop'), ref.tools, OPTS);
      expect(loop.rawText).toBe(loopFresh.rawText);
      // Only what came after the first prompt is computed: the assistant turn and the tool results.
      expect(loop.prefillTokens).toBe(loop.promptTokens - first.promptTokens);
      // That turn made no tool call: while idle, the backend prefilled the conversation as a follow-up renders it.
      expect(loop.message.tool_calls).toBeUndefined();
      await cached.whenIdle();
      const followUpHead = cached.cachedStates().find((s) => s.pin === 'followup')!;
      expect(followUpHead.tokens).toBeGreaterThan(loop.promptTokens * 0.9);

      const follow = await cached.generate(conv('follow_up'), ref.tools, OPTS);
      const followFresh = await fresh.generate(conv('follow_up'), ref.tools, OPTS);
      expect(follow.rawText).toBe(followFresh.rawText);
      expect(followFresh.prefillTokens).toBe(followFresh.promptTokens);
      // Reused: the whole re-rendered history; computed: the answer turn, the follow-up and the generation prompt.
      expect(follow.prefillTokens).toBe(follow.promptTokens - followUpHead.tokens);
      expect(follow.prefillTokens / follow.promptTokens).toBeLessThan(0.1);
      // The pinned query checkpoint moved on to the end of the follow-up message, ready for the next round.
      const followHead = encodePrompt(
        cached.tokenizer,
        renderPrompt(cached.tokenizer, conv('follow_up'), ref.tools, { addGenerationPrompt: false }),
      );
      expect(cached.cachedStates()).toEqual(expect.arrayContaining([{ tokens: followHead.length, pin: 'query' }]));
    } finally {
      await cached.close();
      await fresh.close();
    }
  });

  test('a follow-up arriving before the background prefill is done still reuses the task and matches a fresh run', async () => {
    const cached = await OnnxBackend.load(FIXTURE, { prefillChunkSize: 16 });
    const fresh = await OnnxBackend.load(FIXTURE, { prefixCache: false });
    try {
      await cached.generate(conv('tool_loop'), ref.tools, OPTS);
      // No waiting: generate() stops the background work at its next chunk.
      const follow = await cached.generate(conv('follow_up'), ref.tools, OPTS);
      expect(follow.rawText).toBe((await fresh.generate(conv('follow_up'), ref.tools, OPTS)).rawText);
      const head = encodePrompt(
        cached.tokenizer,
        renderPrompt(cached.tokenizer, conv('first'), ref.tools, { addGenerationPrompt: false }),
      );
      expect(follow.promptTokens - follow.prefillTokens).toBeGreaterThanOrEqual(head.length);
      expect(cached.cachedStates().filter((s) => s.pin === 'followup').length).toBeLessThanOrEqual(1);
    } finally {
      await cached.close();
      await fresh.close();
    }
  });

  test('without pinned checkpoints (the earlier behaviour) the follow-up is prefilled from scratch', async () => {
    const b = await OnnxBackend.load(FIXTURE, { pinnedCheckpoints: false });
    try {
      await b.generate(conv('first'), ref.tools, OPTS);
      await b.generate(conv('tool_loop'), ref.tools, OPTS);
      const follow = await b.generate(conv('follow_up'), ref.tools, OPTS);
      expect(follow.prefillTokens).toBe(follow.promptTokens);
    } finally {
      await b.close();
    }
  });

  test('a new conversation with the same system prompt and tools reuses their state', async () => {
    const b = await OnnxBackend.load(FIXTURE);
    const fresh = await OnnxBackend.load(FIXTURE, { prefixCache: false });
    try {
      await b.generate(conv('follow_up'), ref.tools, OPTS);
      const other: ChatMessage[] = [conv('first')[0]!, { role: 'user', content: 'Fix the flaky test in the parser.' }];
      const r = await b.generate(other, ref.tools, OPTS);
      expect(r.rawText).toBe((await fresh.generate(other, ref.tools, OPTS)).rawText);
      const system = b.cachedStates().find((s) => s.pin === 'system')!;
      expect(system.tokens).toBeGreaterThan(r.promptTokens / 2);
      expect(r.prefillTokens).toBe(r.promptTokens - system.tokens);
    } finally {
      await b.close();
      await fresh.close();
    }
  });
});

describe('layouts users have', () => {
  test('dtype fp16 picks the fp16 decoder and embed file; their logits stay close to PyTorch', async () => {
    const b = await OnnxBackend.load(FIXTURE, { dtype: 'fp16' });
    try {
      expect(b.modelReport()).toMatchObject({
        decoder: 'onnx/decoder_model_merged_fp16.onnx',
        embed: 'onnx/embed_tokens_fp16.onnx',
        dtype: 'fp16',
      });
      const pre = await b.decoder.forward(ref.prompt_ids.first!, b.decoder.newState());
      expect(maxAbsDiff(pre.logits, ref.first_logits)).toBeLessThan(2e-2);
      const r = await b.generate(conv('tool_loop'), ref.tools, { maxNewTokens: 4 });
      expect(r.completionTokens).toBe(4);
    } finally {
      await b.close();
    }
  });

  test('an fp16 decoder next to only the fp32 embed file gets its embeddings cast to float16', async () => {
    const dir = await variant('fp16-fp32-embed', (d) => rm(path.join(d, 'onnx', 'embed_tokens_fp16.onnx')));
    const b = await OnnxBackend.load(dir, { dtype: 'fp16' });
    try {
      expect(b.modelReport()).toMatchObject({
        decoder: 'onnx/decoder_model_merged_fp16.onnx',
        embed: 'onnx/embed_tokens.onnx',
      });
      const pre = await b.decoder.forward(ref.prompt_ids.first!, b.decoder.newState());
      expect(maxAbsDiff(pre.logits, ref.first_logits)).toBeLessThan(2e-2);
    } finally {
      await b.close();
    }
  });

  test('a q4 model file picks the q4 embed file; q4 generates', async () => {
    const b = await OnnxBackend.load(FIXTURE, { modelFile: 'onnx/decoder_model_merged_q4.onnx' });
    try {
      expect(b.modelReport()).toMatchObject({
        decoder: 'onnx/decoder_model_merged_q4.onnx',
        embed: 'onnx/embed_tokens_q4.onnx',
        dtype: 'q4',
      });
      expect((await b.generate(conv('first'), ref.tools, { maxNewTokens: 3 })).completionTokens).toBe(3);
    } finally {
      await b.close();
    }
  });

  test('a directory with only dtype variants: one is picked when it is the only one, several need a setting', async () => {
    const only = await variant('only-q4', async (d) => {
      for (const f of ['decoder_model_merged.onnx', 'decoder_model_merged_fp16.onnx'])
        await rm(path.join(d, 'onnx', f));
    });
    const b = await OnnxBackend.load(only);
    expect(b.modelReport()).toMatchObject({
      decoder: 'onnx/decoder_model_merged_q4.onnx',
      embed: 'onnx/embed_tokens_q4.onnx',
    });
    await b.close();

    const several = await variant('no-fp32', (d) => rm(path.join(d, 'onnx', 'decoder_model_merged.onnx')));
    const err = await loadError(several);
    expect(err.message).toMatch(/no float32 ONNX graph .* several variants to choose from \(fp16, q4\)/);
    expect(err.message).toContain('onnx/decoder_model_merged_fp16.onnx, onnx/decoder_model_merged_q4.onnx');
    expect(err.message).toMatch(/FROGNANO_ONNX_DTYPE.*FROGNANO_ONNX_MODEL_FILE/);
  });

  test('a decoder without any embed file is refused with what the directory holds', async () => {
    const dir = await variant('no-embed', async (d) => {
      for (const f of ['embed_tokens.onnx', 'embed_tokens_fp16.onnx', 'embed_tokens_q4.onnx'])
        await rm(path.join(d, 'onnx', f));
    });
    expect((await loadError(dir)).message).toMatch(
      /takes inputs_embeds but no embed_tokens\.onnx .* holds onnx\/decoder_model_merged\.onnx, onnx\/decoder_model_merged_fp16\.onnx, onnx\/decoder_model_merged_q4\.onnx/,
    );
  });

  test('a dtype the directory lacks, or an unknown one, is refused with what is there', async () => {
    const missing = await loadError(FIXTURE, { dtype: 'q4f16' });
    expect(missing.message).toMatch(
      /no q4f16 decoder graph .*decoder_model_merged_q4f16\.onnx.*available dtypes: fp32, fp16, q4/,
    );
    expect((await loadError(FIXTURE, { dtype: 'fp8' })).message).toMatch(
      /unknown ONNX dtype "fp8": use one of fp32, fp16/,
    );
    const wrong = await loadError(FIXTURE, { modelFile: 'onnx/decoder_model_merged_q4.onnx', dtype: 'fp16' });
    expect(wrong.message).toMatch(/is q4, but dtype fp16 was asked for/);
    const absent = await loadError(FIXTURE, { modelFile: 'onnx/model_int8.onnx' });
    expect(absent.message).toMatch(
      /model file .*model_int8\.onnx does not exist; the directory holds onnx\/decoder_model_merged\.onnx/,
    );
  });

  test('the chat template kept in tokenizer_config.json (the older layout) gives the same prompt', async () => {
    const dir = await variant('template-in-config', async (d) => {
      const template = await readFile(path.join(d, 'chat_template.jinja'), 'utf8');
      const configPath = path.join(d, 'tokenizer_config.json');
      const config = JSON.parse(await readFile(configPath, 'utf8'));
      await writeFile(configPath, JSON.stringify({ ...config, chat_template: template }));
      await rm(path.join(d, 'chat_template.jinja'));
    });
    const b = await OnnxBackend.load(dir);
    try {
      expect(b.modelReport().chatTemplate).toBe('tokenizer_config.json');
      expect(b.renderPrompt(conv('tool_loop'), ref.tools)).toBe(ref.prompts.tool_loop);
    } finally {
      await b.close();
    }
  });

  test('no chat template, or one that does not render, fails at load time', async () => {
    const none = await variant('no-template', (d) => rm(path.join(d, 'chat_template.jinja')));
    expect((await loadError(none)).message).toMatch(
      /has no chat template: looked for chat_template\.jinja and the chat_template entry of tokenizer_config\.json/,
    );
    const broken = await variant('bad-template', (d) =>
      writeFile(path.join(d, 'chat_template.jinja'), "{{ raise_exception('unsupported') }}"),
    );
    expect((await loadError(broken)).message).toMatch(
      /chat template from chat_template\.jinja .* does not render: .*unsupported/,
    );
  });

  test('the prefill chunk shrinks so one run returns at most the logits budget', async () => {
    const vocab = ref.first_logits.length;
    const b = await OnnxBackend.load(FIXTURE, { prefillLogitsBudgetBytes: vocab * 4 * 10 });
    try {
      expect(b.modelReport().prefillChunkSize).toBe(10);
      const pre = await b.decoder.forward(ref.prompt_ids.first!, b.decoder.newState());
      expect(maxAbsDiff(pre.logits, ref.first_logits)).toBeLessThan(5e-5);
    } finally {
      await b.close();
    }
  });
});
