/**
 * OnnxBackend end to end on the tiny model: offline loading, the chat template with tools, greedy and seeded
 * sampling, stop strings, end-of-turn tokens, length cap, abort, prefix reuse across turns, bad model dirs.
 */
import { cp, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import { buildTinyModel } from '../support/tinyModel/buildTinyModel.js';
import { OnnxBackend } from '../../src/inference/onnx/backend.js';
import { decodeLoop } from '../../src/inference/onnx/decode.js';
import { createRng } from '../../src/inference/onnx/sampling.js';
import { encodePrompt } from '../../src/inference/onnx/tokenizer.js';
import { ModelError, type ChatMessage, type ToolSpec } from '../../src/inference/types.js';

let root: string;
let modelDir: string;
let backend: OnnxBackend;

const TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'Read',
      description: 'Read a file from the repository.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'Repository-relative path of the file.' },
          offset: { type: 'integer', description: 'First line to show.' },
        },
        required: ['file_path'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Bash',
      description: 'Run a shell command in the repository.',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
];

/**
 * The tiny model's weights are random, so what it says is gibberish; for this conversation its greedy answer
 * happens to run past 60 tokens without an end-of-turn token (checked in the first generate test), which the
 * tests of stop strings and length caps rely on.
 */
/** Greedy decoding: generate() samples with upstream Leaf's settings unless told otherwise. */
const GREEDY = { temperature: 0 } as const;

const conversation = (): ChatMessage[] => [
  { role: 'system', content: 'You are a software engineering agent.' },
  { role: 'user', content: 'Make the tests pass.' },
];

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'onnx-backend-'));
  modelDir = path.join(root, 'tiny');
  await buildTinyModel(modelDir);
  backend = await OnnxBackend.load(modelDir);
});
afterAll(async () => {
  await backend?.close();
  await rm(root, { recursive: true, force: true });
});

/** Greedy token ids straight from the decoder, to pick stop tokens the model really produces. */
async function greedyIds(b: OnnxBackend, messages: ChatMessage[], n: number): Promise<number[]> {
  const ids = encodePrompt(b.tokenizer, b.renderPrompt(messages, TOOLS));
  const pre = await b.decoder.forward(ids, b.decoder.newState());
  const out = await decodeLoop(b.decoder, pre.logits, pre.state, {
    maxNewTokens: n,
    eosTokenIds: new Set(),
    rng: createRng(0),
  });
  return out.tokens;
}

/** A copy of the tiny model directory, changed by `mutate`. */
async function variant(name: string, mutate: (dir: string) => Promise<void>): Promise<string> {
  const dir = path.join(root, name);
  await cp(modelDir, dir, { recursive: true });
  await mutate(dir);
  return dir;
}

/** Loads the model in `dir` and checks that it says what the main tiny model says (`check` runs first). */
async function expectSameTextAsMain(
  dir: string,
  maxNewTokens: number,
  check?: (b: OnnxBackend) => void,
): Promise<void> {
  const b = await OnnxBackend.load(dir);
  try {
    check?.(b);
    const r = await b.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens });
    const ref = await backend.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens });
    expect(r.rawText).toBe(ref.rawText);
  } finally {
    await b.close();
  }
}

test('loads offline from a local directory with a single onnxruntime copy', async () => {
  const { env } = await import('@huggingface/transformers');
  expect(env.allowRemoteModels).toBe(false);
  expect(backend.info()).toEqual({ backend: 'onnx', model: 'tiny', contextLength: 131072, device: 'cpu' });
  // transformers.js depends on onnxruntime-node too; both must resolve to the same package.
  const require = createRequire(import.meta.url);
  const fromTransformers = createRequire(require.resolve('@huggingface/transformers')).resolve('onnxruntime-node');
  expect(fromTransformers).toBe(require.resolve('onnxruntime-node'));
});

test('the prompt is the chat template with the tool specs in the system turn', async () => {
  const prompt = backend.renderPrompt(conversation(), TOOLS);
  expect(prompt.startsWith('<|im_start|>system\nYou are a software engineering agent.')).toBe(true);
  expect(prompt).toContain('<name>Read</name>');
  expect(prompt).toContain('<description>Repository-relative path of the file.</description>');
  expect(prompt).toContain('<name>Bash</name>');
  expect(prompt).toContain('<required>["file_path"]</required>');
  expect(prompt.endsWith('<|im_start|>user\nMake the tests pass.<|im_end|>\n<|im_start|>assistant\n<think>\n')).toBe(
    true,
  );

  // Earlier assistant tool calls and tool results are rendered in qwen3_coder form.
  const history: ChatMessage[] = [
    ...conversation(),
    {
      role: 'assistant',
      content: '',
      reasoning: 'Look first.',
      tool_calls: [{ id: 'c1', name: 'Read', arguments: { file_path: 'src/parse.ts', offset: 2 } }],
    },
    { role: 'tool', content: '1. export {}', tool_call_id: 'c1', name: 'Read' },
  ];
  const next = backend.renderPrompt(history, TOOLS);
  expect(next).toContain(
    '<think>\nLook first.\n</think>\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/parse.ts\n</parameter>\n<parameter=offset>\n2\n</parameter>\n</function>\n</tool_call><|im_end|>',
  );
  expect(next).toContain('<|im_start|>user\n<tool_response>\n1. export {}\n</tool_response><|im_end|>');
});

test('generate() with tools: token counts, streaming and greedy determinism', async () => {
  const long = await backend.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens: 60 });
  expect(long.finishReason).toBe('length'); // precondition of the tests below, see conversation()
  const deltas: string[] = [];
  const a = await backend.generate(conversation(), TOOLS, {
    ...GREEDY,
    maxNewTokens: 24,
    onToken: (d) => deltas.push(d),
  });
  expect(a.promptTokens).toBe(await backend.countTokens(conversation(), TOOLS));
  expect(a.promptTokens).toBeGreaterThan(100);
  expect(a.completionTokens).toBe(24);
  expect(a.finishReason).toBe('length');
  expect(deltas.join('')).toBe(a.rawText);
  expect(a.message.role).toBe('assistant');
  // The template opened <think>; with no </think> yet everything generated is reasoning.
  expect(a.message.reasoning).toBe(a.rawText!.trim());

  const fresh = await OnnxBackend.load(modelDir, { prefixCache: false });
  try {
    const b = await fresh.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens: 24 });
    expect(b.rawText).toBe(a.rawText);
    expect(b.prefillTokens).toBe(b.promptTokens);
  } finally {
    await fresh.close();
  }
});

test('seeded sampling is reproducible and differs across seeds', async () => {
  const sample = async (seed: number) =>
    (
      await backend.generate(conversation(), TOOLS, {
        ...GREEDY,
        maxNewTokens: 16,
        temperature: 1.0,
        topP: 0.95,
        topK: 50,
        seed,
      })
    ).rawText;
  const s1 = await sample(1);
  expect(await sample(1)).toBe(s1);
  const others = [await sample(2), await sample(3)];
  expect(others.some((t) => t !== s1)).toBe(true);
  const greedy = (await backend.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens: 16 })).rawText;
  expect([s1, ...others].some((t) => t !== greedy)).toBe(true);
});

test('unset sampling fields are upstream Leaf eval sampling (0.6 / 0.95 / 20 / 0 / 1.0), not greedy', async () => {
  const leaf = { temperature: 0.6, topP: 0.95, topK: 20, minP: 0, repetitionPenalty: 1.0 };
  for (const seed of [1, 2]) {
    const unset = await backend.generate(conversation(), TOOLS, { maxNewTokens: 16, seed });
    const explicit = await backend.generate(conversation(), TOOLS, { ...leaf, maxNewTokens: 16, seed });
    expect(unset.rawText).toBe(explicit.rawText);
  }
  const greedy = (await backend.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens: 16 })).rawText;
  const sampled = await Promise.all(
    [3, 4, 5].map(async (seed) => (await backend.generate(conversation(), TOOLS, { maxNewTokens: 16, seed })).rawText),
  );
  expect(sampled.some((t) => t !== greedy)).toBe(true);
});

test('a stop string ends the turn before it, also in the stream', async () => {
  const full = (await backend.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens: 30 })).rawText!;
  // A stop string the model really produces, taken from the middle of its greedy output.
  let stop = '';
  let at = -1;
  for (let start = 8; start < full.length - 3 && at < 0; start++) {
    const candidate = full.slice(start, start + 3);
    if (candidate.trim().length === 3 && !candidate.includes('\uFFFD') && full.indexOf(candidate) === start) {
      stop = candidate;
      at = start;
    }
  }
  expect(at).toBeGreaterThan(0);
  const deltas: string[] = [];
  const r = await backend.generate(conversation(), TOOLS, {
    ...GREEDY,
    maxNewTokens: 30,
    stop: [stop],
    onToken: (d) => deltas.push(d),
  });
  expect(r.finishReason).toBe('stop');
  expect(r.rawText).toBe(full.slice(0, at));
  expect(deltas.join('')).toBe(r.rawText);
  expect(r.completionTokens).toBeLessThan(30);
});

test('an end-of-turn token from generation_config.json stops generation', async () => {
  const ids = await greedyIds(backend, conversation(), 12);
  const k = ids.findIndex((id, i) => i >= 3 && ids.indexOf(id) === i);
  expect(k).toBeGreaterThanOrEqual(3);
  const dir = await variant('eos-variant', async (d) => {
    const genPath = path.join(d, 'generation_config.json');
    const gen = JSON.parse(await readFile(genPath, 'utf8'));
    gen.eos_token_id = [...gen.eos_token_id, ids[k]];
    await writeFile(genPath, JSON.stringify(gen));
  });
  const b = await OnnxBackend.load(dir);
  try {
    const r = await b.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens: 12 });
    expect(r.finishReason).toBe('stop');
    expect(r.completionTokens).toBe(k);
    expect(r.rawText).toBe(b.tokenizer.decode(ids.slice(0, k), { skip_special_tokens: false }));
  } finally {
    await b.close();
  }
});

test('max new tokens gives finishReason length; an abort gives aborted', async () => {
  const r = await backend.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens: 5 });
  expect(r).toMatchObject({ finishReason: 'length', completionTokens: 5 });

  const controller = new AbortController();
  let seen = 0;
  const aborted = await backend.generate(conversation(), TOOLS, {
    maxNewTokens: 50,
    signal: controller.signal,
    onToken: () => {
      if (++seen === 3) controller.abort();
    },
  });
  expect(aborted.finishReason).toBe('aborted');
  expect(aborted.completionTokens).toBeLessThan(50);
  const pre = new AbortController();
  pre.abort();
  expect((await backend.generate(conversation(), TOOLS, { signal: pre.signal })).completionTokens).toBe(0);

  // During a long prefill the signal is honoured between chunks.
  const chunked = await OnnxBackend.load(modelDir, { prefillChunkSize: 16 });
  try {
    const during = new AbortController();
    const pending = chunked.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens: 50, signal: during.signal });
    setImmediate(() => during.abort());
    const r = await pending;
    expect(r.finishReason).toBe('aborted');
    expect(r.completionTokens).toBe(0);
    // It stopped inside the prefill: a finished prefill would have left the prompt state in the cache.
    const after = await chunked.generate(conversation(), TOOLS, { ...GREEDY, maxNewTokens: 1 });
    expect(after.prefillTokens).toBe(after.promptTokens);
  } finally {
    await chunked.close();
  }
});

test('agent turns reuse the cached prefix and produce what a full re-run produces', async () => {
  const cached = await OnnxBackend.load(modelDir);
  const uncached = await OnnxBackend.load(modelDir, { prefixCache: false });
  try {
    const messages = conversation();
    for (let turn = 0; turn < 3; turn++) {
      const r = await cached.generate(messages, TOOLS, { ...GREEDY, maxNewTokens: 12 });
      const ref = await uncached.generate(messages, TOOLS, { ...GREEDY, maxNewTokens: 12 });
      expect(r.rawText).toBe(ref.rawText);
      expect(r.promptTokens).toBe(ref.promptTokens);
      if (turn === 0) expect(r.prefillTokens).toBe(r.promptTokens);
      // Later turns only compute what was appended since the previous prompt.
      else expect(r.prefillTokens).toBeLessThan(r.promptTokens / 3);
      messages.push(
        {
          role: 'assistant',
          content: '',
          reasoning: r.message.reasoning,
          tool_calls: [{ id: `c${turn}`, name: 'Bash', arguments: { command: 'npm test' } }],
        },
        { role: 'tool', content: `Exit code: ${turn}\nSTDOUT:\nok`, tool_call_id: `c${turn}`, name: 'Bash' },
      );
    }
  } finally {
    await cached.close();
    await uncached.close();
  }
});

test('a scripted answer with reasoning and a tool call comes back parsed, ending the turn at <|im_end|>', async () => {
  const promptTokens = await backend.countTokens(conversation(), TOOLS);
  const answer =
    'The test runner output will show the failure.\n</think>\n\nRunning the tests first.\n\n' +
    '<tool_call>\n<function=Bash>\n<parameter=command>\nnpm test -- --runInBand\n</parameter>\n</function>\n</tool_call>';
  const imEnd = backend.tokenizer.get_vocab().get('<|im_end|>')!;
  const scriptIds = [...backend.tokenizer.encode(answer, { add_special_tokens: false }), imEnd];
  const dir = path.join(root, 'scripted');
  await buildTinyModel(dir, { script: { startPosition: promptTokens - 1, tokenIds: scriptIds } });
  const b = await OnnxBackend.load(dir);
  try {
    const streamed: string[] = [];
    const r = await b.generate(conversation(), TOOLS, {
      ...GREEDY,
      maxNewTokens: 200,
      onToken: (d) => streamed.push(d),
    });
    expect(r.rawText).toBe(answer);
    expect(streamed.join('')).toBe(answer);
    expect(r.finishReason).toBe('tool_calls');
    expect(r.completionTokens).toBe(scriptIds.length - 1);
    expect(r.parseErrors).toEqual([]);
    expect(r.message.reasoning).toBe('The test runner output will show the failure.');
    expect(r.message.content).toBe('Running the tests first.');
    expect(r.message.tool_calls).toEqual([
      { id: expect.any(String), name: 'Bash', arguments: { command: 'npm test -- --runInBand' } },
    ]);

    // Next turn: the tool result is appended; the cached prompt state is reused, the new turn is rendered
    // with this call in it, and past the script the model is back to its own (unscripted) output.
    const next = [
      ...conversation(),
      r.message,
      { role: 'tool' as const, content: 'Exit code: 0', tool_call_id: r.message.tool_calls![0]!.id, name: 'Bash' },
    ];
    expect(b.renderPrompt(next, TOOLS)).toContain('<parameter=command>\nnpm test -- --runInBand\n</parameter>');
    const r2 = await b.generate(next, TOOLS, { ...GREEDY, maxNewTokens: 4 });
    // The template re-renders the generated turn token for token, so the post-generation state is reused:
    // only the tool result and the new generation prompt are computed.
    expect(r2.prefillTokens).toBe(r2.promptTokens - (promptTokens + scriptIds.length - 1));
    expect(r2.finishReason).toBe('length');
  } finally {
    await b.close();
  }
});

test('the transformers.js Qwen3.5 layout (embed_tokens + decoder_model_merged, M-RoPE) gives the same text', async () => {
  const dir = path.join(root, 'split');
  await buildTinyModel(dir, { splitEmbedding: true, mropePositionIds: true });
  await expectSameTextAsMain(dir, 10, (b) => expect(b.decoder.session.inputNames).toContain('inputs_embeds'));
});

test('weights in external data (model.onnx + model.onnx_data) load from the graph directory', async () => {
  const dir = path.join(root, 'external');
  await buildTinyModel(dir, { externalData: true });
  const graphSize = (await stat(path.join(dir, 'model.onnx'))).size;
  expect((await stat(path.join(dir, 'model.onnx_data'))).size).toBeGreaterThan(10 * graphSize);
  await expectSameTextAsMain(dir, 8);
});

test('the Hugging Face layout (onnx/model.onnx) loads too', async () => {
  const dir = await variant('hub-layout', async (d) => {
    await mkdir(path.join(d, 'onnx'));
    await rename(path.join(d, 'model.onnx'), path.join(d, 'onnx', 'model.onnx'));
  });
  await expectSameTextAsMain(dir, 8);
});

describe('malformed model directories fail with a clear error', () => {
  test('missing directory', async () => {
    await expect(OnnxBackend.load(path.join(root, 'nope'))).rejects.toThrow(/model directory .*nope does not exist/);
  });
  test('missing model.onnx', async () => {
    const dir = await variant('no-graph', (d) => rm(path.join(d, 'model.onnx')));
    await expect(OnnxBackend.load(dir)).rejects.toThrow(/no ONNX graph in .*expected one of model\.onnx/);
  });
  test('missing tokenizer.json', async () => {
    const dir = await variant('no-tokenizer', (d) => rm(path.join(d, 'tokenizer.json')));
    const err = await OnnxBackend.load(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as Error).message).toMatch(/missing tokenizer\.json/);
  });
  test('corrupt graph file', async () => {
    const dir = await variant('corrupt', (d) => writeFile(path.join(d, 'model.onnx'), 'not a protobuf'));
    await expect(OnnxBackend.load(dir)).rejects.toThrow(/onnxruntime cannot load .*model\.onnx/);
  });
  test('invalid config.json', async () => {
    const dir = await variant('bad-config', (d) => writeFile(path.join(d, 'config.json'), '{oops'));
    await expect(OnnxBackend.load(dir)).rejects.toThrow(/config\.json is not valid JSON/);
  });
  test('a decoder taking inputs_embeds without embed_tokens.onnx', async () => {
    const dir = path.join(root, 'split-no-embed');
    await buildTinyModel(dir, { splitEmbedding: true });
    await rm(path.join(dir, 'onnx', 'embed_tokens.onnx'));
    await expect(OnnxBackend.load(dir)).rejects.toThrow(/takes inputs_embeds but no embed_tokens\.onnx/);
  });
  test('a state input without the output that carries it', async () => {
    const dir = await variant('no-present', async (d) => {
      const { onnx } = onnxProto;
      const info = (name: string, elemType: number, dims: (number | string)[]) =>
        onnx.ValueInfoProto.create({
          name,
          type: {
            tensorType: {
              elemType,
              shape: { dim: dims.map((x) => (typeof x === 'number' ? { dimValue: x } : { dimParam: x })) },
            },
          },
        });
      const graph = onnx.GraphProto.create({
        name: 'orphan_state',
        node: [onnx.NodeProto.create({ opType: 'Identity', input: ['past_ssm.0'], output: ['logits'] })],
        input: [info('input_ids', 7, ['batch', 'seq']), info('past_ssm.0', 1, ['batch', 4, 8])],
        output: [info('logits', 1, ['batch', 4, 8])],
      });
      const model = onnx.ModelProto.create({ irVersion: 7, opsetImport: [{ domain: '', version: 14 }], graph });
      await writeFile(path.join(d, 'model.onnx'), onnx.ModelProto.encode(model).finish());
    });
    await expect(OnnxBackend.load(dir)).rejects.toThrow(/input past_ssm\.0 has no matching output present_ssm\.0/);
  });
});
