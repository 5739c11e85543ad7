/**
 * The generic decoding machinery on a real (tiny) ONNX model built by test/support/tinyModel:
 * state discovery, prefix reuse vs full recomputation, chunked prefill, sampling, streaming detokenization.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { buildTinyModel, type TinyModelConfig } from '../support/tinyModel/buildTinyModel.js';
import { lastRow, OnnxDecoder } from '../../src/inference/onnx/decode.js';
import { castFloat, floatToHalf, halfToFloat } from '../../src/inference/onnx/float16.js';
import { IncrementalDetokenizer } from '../../src/inference/onnx/detokenize.js';
import { locateModelFiles } from '../../src/inference/onnx/modelFiles.js';
import { PrefixCache } from '../../src/inference/onnx/prefixCache.js';
import {
  argmax,
  candidateDistribution,
  createRng,
  sampleToken,
  type SamplingOptions,
} from '../../src/inference/onnx/sampling.js';
import { loadTokenizer } from '../../src/inference/onnx/tokenizer.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'onnx-decode-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function decoderFor(name: string, cfg: Partial<TinyModelConfig> = {}, prefillChunkSize?: number) {
  const dir = path.join(root, name);
  await buildTinyModel(dir, cfg);
  const files = await locateModelFiles(dir);
  const session = await ort.InferenceSession.create(files.decoderPath);
  return { dir, decoder: new OnnxDecoder(session, files.config, undefined, { prefillChunkSize }) };
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const PROMPT = [12, 40, 41, 99, 7, 250, 3, 18, 77, 120, 5, 66, 201, 33];

describe('tiny hybrid model (linear attention + full attention)', () => {
  test('state pairs are discovered from the session with Qwen3.5 export names', async () => {
    const { decoder } = await decoderFor('hybrid-specs');
    expect(decoder.specs.map((s) => [s.input, s.output, s.kind])).toEqual([
      ['past_conv.0', 'present_conv.0', 'fixed'],
      ['past_recurrent.0', 'present_recurrent.0', 'fixed'],
      ['past_key_values.1.key', 'present.1.key', 'sequence'],
      ['past_key_values.1.value', 'present.1.value', 'sequence'],
    ]);
    expect(decoder.rewindable).toBe(false);
    const empty = decoder.newState();
    expect(empty.tensors.get('past_key_values.1.key')!.dims).toEqual([1, 4, 0, 16]);
    expect(empty.tensors.get('past_recurrent.0')!.dims).toEqual([1, 4, 16, 16]);
  });

  test('prefilling only the new tokens on a cached state gives the logits of a full re-run', async () => {
    const { decoder } = await decoderFor('hybrid-prefix');
    const full = await decoder.forward(PROMPT, decoder.newState());

    const cache = new PrefixCache(decoder);
    const first = await decoder.forward(PROMPT.slice(0, 9), decoder.newState());
    cache.store(PROMPT.slice(0, 9), first.state);
    const hit = cache.lookup(PROMPT);
    expect(hit.reused).toBe(9);
    const resumed = await decoder.forward(PROMPT.slice(hit.reused), hit.state!);

    expect(resumed.state.length).toBe(PROMPT.length);
    expect(maxAbsDiff(full.logits, resumed.logits)).toBeLessThan(1e-4);
    // The logits depend on the history at all (otherwise the comparison above would prove nothing).
    const noHistory = await decoder.forward(PROMPT.slice(9), decoder.newState());
    expect(maxAbsDiff(full.logits, noHistory.logits)).toBeGreaterThan(1e-2);
  });

  test('recurrent state is never rewound: a cached sequence that diverges is not reused', async () => {
    const { decoder } = await decoderFor('hybrid-diverge');
    const cache = new PrefixCache(decoder);
    const other = [...PROMPT.slice(0, 6), 300, 301, 302];
    cache.store(other, (await decoder.forward(other, decoder.newState())).state);
    expect(cache.lookup(PROMPT).reused).toBe(0);
    // An exact prefix is reused; the whole prompt never is, one token is left to produce logits.
    cache.store(PROMPT, (await decoder.forward(PROMPT, decoder.newState())).state);
    expect(cache.lookup([...PROMPT, 9]).reused).toBe(PROMPT.length);
    expect(cache.lookup(PROMPT).reused).toBe(0);
  });

  test('chunked prefill equals a single run', async () => {
    const { dir, decoder } = await decoderFor('hybrid-chunked');
    const chunked = new OnnxDecoder(decoder.session, (await locateModelFiles(dir)).config, undefined, {
      prefillChunkSize: 3,
    });
    const a = await decoder.forward(PROMPT, decoder.newState());
    const b = await chunked.forward(PROMPT, chunked.newState());
    expect(maxAbsDiff(a.logits, b.logits)).toBeLessThan(1e-4);
  });

  test('M-RoPE exports ([3, batch, seq] position_ids) are fed correctly', async () => {
    const plain = await decoderFor('plain-pos');
    const mrope = await decoderFor('mrope-pos', { mropePositionIds: true });
    expect(
      (mrope.decoder.session.inputMetadata.find((m) => m.name === 'position_ids') as unknown as { shape: unknown[] })
        .shape,
    ).toHaveLength(3);
    const a = await plain.decoder.forward(PROMPT, plain.decoder.newState());
    const b = await mrope.decoder.forward(PROMPT, mrope.decoder.newState());
    expect(maxAbsDiff(a.logits, b.logits)).toBeLessThan(1e-5);
  });
});

describe('tiny attention-only model', () => {
  test('KV caches are truncated to the common prefix and match a full re-run', async () => {
    const { decoder } = await decoderFor('kv-only', { layerTypes: ['full_attention', 'full_attention'] });
    expect(decoder.rewindable).toBe(true);
    const cache = new PrefixCache(decoder);
    const diverging = [...PROMPT.slice(0, 10), 300, 301, 302, 303];
    cache.store(diverging, (await decoder.forward(diverging, decoder.newState())).state);
    const hit = cache.lookup(PROMPT);
    expect(hit.reused).toBe(10);
    expect(hit.state!.tensors.get('past_key_values.0.key')!.dims).toEqual([1, 4, 10, 16]);
    const resumed = await decoder.forward(PROMPT.slice(10), hit.state!);
    const full = await decoder.forward(PROMPT, decoder.newState());
    expect(maxAbsDiff(full.logits, resumed.logits)).toBeLessThan(1e-4);
  });
});

describe('bounded prefill memory', () => {
  test('a graph taking num_logits_to_keep returns the last row only, with the same values', async () => {
    const plain = await decoderFor('keep-plain');
    const keep = await decoderFor('keep-last', { logitsToKeep: true });
    expect(keep.decoder.keepsLastLogitsOnly).toBe(true);
    expect(plain.decoder.keepsLastLogitsOnly).toBe(false);
    expect(keep.decoder.prefillChunkSize).toBe(512);
    const a = await plain.decoder.forward(PROMPT, plain.decoder.newState());
    const b = await keep.decoder.forward(PROMPT, keep.decoder.newState());
    expect(maxAbsDiff(a.logits, b.logits)).toBeLessThan(1e-5);
  });

  test('without it, the prefill chunk is cut so one run returns at most the logits budget', async () => {
    // 40,000 rows of float32 logits are 160 kB per token: a 64 MiB budget allows 419 tokens per run.
    const { decoder } = await decoderFor('big-vocab', { vocabSize: 40000 });
    expect(decoder.prefillChunkSize).toBe(Math.floor((64 * 1024 * 1024) / (40000 * 4)));
    const files = await locateModelFiles(path.join(root, 'big-vocab'));
    const small = new OnnxDecoder(decoder.session, files.config, undefined, {
      prefillLogitsBudgetBytes: 40000 * 4 * 5,
    });
    expect(small.prefillChunkSize).toBe(5);
    const a = await decoder.forward(PROMPT, decoder.newState());
    const b = await small.forward(PROMPT, small.newState());
    expect(a.logits.length).toBe(40000);
    expect(maxAbsDiff(a.logits, b.logits)).toBeLessThan(1e-4);
  });
});

describe('logits', () => {
  test('the last position is read from float32 and float16 logits', () => {
    expect(Array.from(lastRow(new ort.Tensor('float32', Float32Array.from([1, 2, 3, 4, 5, 6]), [1, 2, 3])))).toEqual([
      4, 5, 6,
    ]);
    expect(Array.from(lastRow(new ort.Tensor('float32', Float32Array.from([7, 8, 9]), [1, 1, 3])))).toEqual([7, 8, 9]);
    // Half-precision bits of 1, -2, 0, 0, 0 | 0.5, -0, the smallest subnormal (2^-24), +Infinity, NaN.
    const half = Uint16Array.from([0x3c00, 0xc000, 0, 0, 0, 0x3800, 0x8000, 0x0001, 0x7c00, 0x7e00]);
    expect(Array.from(lastRow(new ort.Tensor('float16', half, [1, 2, 5])))).toEqual([0.5, -0, 2 ** -24, Infinity, NaN]);
    expect(Array.from(lastRow(new ort.Tensor('float16', half.subarray(0, 5), [1, 1, 5])))).toEqual([1, -2, 0, 0, 0]);
  });
});

describe('float16', () => {
  test('float32 -> float16 bits round to nearest even, with subnormals, overflow, infinities and NaN', () => {
    expect([0, -0, 1, -2, 0.5, 65504, 2 ** -24, 2 ** -14].map(floatToHalf)).toEqual([
      0, 0x8000, 0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x0400,
    ]);
    expect(floatToHalf(70000)).toBe(0x7c00);
    expect(floatToHalf(-Infinity)).toBe(0xfc00);
    expect(Number.isNaN(halfToFloat(floatToHalf(NaN)))).toBe(true);
    expect(floatToHalf(2 ** -26)).toBe(0); // below half the smallest subnormal
    expect(floatToHalf(1 + 2 ** -11)).toBe(0x3c00); // a tie rounds to the even mantissa
    expect(floatToHalf(1 + 3 * 2 ** -11)).toBe(0x3c02);
    const r = createRng(5);
    for (let i = 0; i < 2000; i++) {
      const x = (r() - 0.5) * 2 ** (r() * 30 - 15);
      expect(Math.abs(halfToFloat(floatToHalf(x)) - x)).toBeLessThanOrEqual(Math.max(Math.abs(x) * 2 ** -11, 2 ** -25));
    }
  });

  test('embeddings are cast to the type the decoder takes, and a type with no cast is refused', () => {
    const t = new ort.Tensor('float32', Float32Array.from([1, -2, 0.5]), [1, 1, 3]);
    const h = castFloat(t, 'float16');
    expect(h.type).toBe('float16');
    expect(Array.from(h.data as Uint16Array)).toEqual([0x3c00, 0xc000, 0x3800]);
    expect(Array.from(castFloat(h, 'float32').data as Float32Array)).toEqual([1, -2, 0.5]);
    expect(castFloat(t, 'float32')).toBe(t);
    expect(() => castFloat(t, 'int8')).toThrow(/returns float32 but the decoder takes int8 inputs_embeds/);
  });
});

describe('sampling', () => {
  const logits = Float32Array.from([1.0, 3.0, 2.5, -1.0, 2.9]);

  test('greedy is argmax, and top-k 1 is greedy at any temperature', () => {
    expect(sampleToken(logits, {}, createRng(1))).toBe(1);
    expect(argmax(logits)).toBe(1);
    for (let s = 0; s < 20; s++) expect(sampleToken(logits, { temperature: 2, topK: 1 }, createRng(s))).toBe(1);
  });

  test('same seed, same draws; different seeds, different draws', () => {
    const draw = (seed: number) => {
      const rng = createRng(seed);
      return Array.from({ length: 50 }, () => sampleToken(logits, { temperature: 1 }, rng));
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
  });

  test('frequencies follow the softmax; top-p and top-k cut the tail', () => {
    const rng = createRng(42);
    const counts = new Array(5).fill(0);
    const n = 20000;
    for (let i = 0; i < n; i++) counts[sampleToken(logits, { temperature: 1 }, rng)]++;
    const z = Array.from(logits, (l) => Math.exp(l));
    const sum = z.reduce((a, b) => a + b, 0);
    z.forEach((p, i) => expect(Math.abs(counts[i] / n - p / sum)).toBeLessThan(0.02));

    // Sorted probabilities ~ [0.35, 0.32, 0.21, 0.08, 0.01]: top-p 0.6 keeps the first two.
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) seen.add(sampleToken(logits, { temperature: 1, topP: 0.6 }, rng));
    expect([...seen].sort()).toEqual([1, 4]);
    seen.clear();
    for (let i = 0; i < 2000; i++) seen.add(sampleToken(logits, { temperature: 1, topK: 3 }, rng));
    expect([...seen].sort()).toEqual([1, 2, 4]);
  });
});

/**
 * The distribution a sampler with these settings must draw from, computed the plain way (full softmax, full
 * sort, cuts in transformers' order) as an independent reference for the sampler's shortcuts.
 */
function referenceDistribution(
  logits: ArrayLike<number>,
  o: Required<Omit<SamplingOptions, 'repetitionPenalty'>>,
): Map<number, number> {
  const scaled = Array.from(logits, (l, id) => ({ id, l: l / o.temperature }));
  scaled.sort((a, b) => b.l - a.l || a.id - b.id);
  let kept = o.topK > 0 ? scaled.slice(0, o.topK) : scaled;
  const softmax = (xs: { id: number; l: number }[]) => {
    const m = Math.max(...xs.map((x) => x.l));
    const e = xs.map((x) => Math.exp(x.l - m));
    const z = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / z);
  };
  let p = softmax(kept);
  if (o.topP < 1) {
    let c = 0;
    let n = 0;
    while (n < p.length && c < o.topP) c += p[n++]!;
    kept = kept.slice(0, n);
    p = softmax(kept);
  }
  if (o.minP > 0) {
    const floor = o.minP * p[0]!;
    kept = kept.filter((_, i) => p[i]! >= floor);
    p = softmax(kept);
  }
  return new Map(kept.map((k, i) => [k.id, p[i]!]));
}

function empirical(
  logits: ArrayLike<number>,
  opts: SamplingOptions,
  seed: number,
  n: number,
  seen?: number[],
): Map<number, number> {
  const rng = createRng(seed);
  const counts = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const id = sampleToken(logits, opts, rng, seen);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return new Map([...counts].map(([id, c]) => [id, c / n]));
}

function expectSameDistribution(actual: Map<number, number>, expected: Map<number, number>, tolerance: number): void {
  // Nothing outside the expected support is ever drawn, and every frequency is close to its probability.
  expect([...actual.keys()].filter((id) => !expected.has(id))).toEqual([]);
  for (const [id, p] of expected) expect(Math.abs((actual.get(id) ?? 0) - p)).toBeLessThan(tolerance);
}

describe('sampling with upstream Leaf settings (temperature, top-k, top-p, min-p, repetition penalty)', () => {
  // 160 logits from a fixed generator: a long-tailed row with a few strong candidates.
  const rng = createRng(2024);
  const row = Float32Array.from({ length: 160 }, (_, i) => (i % 37 === 0 ? 4 : 0) + 3 * rng() - 1.5 * rng());

  test('Leaf eval defaults (0.6 / top-p 0.95 / top-k 20 / min-p 0) draw from the reference distribution', () => {
    const opts = { temperature: 0.6, topP: 0.95, topK: 20, minP: 0 };
    const expected = referenceDistribution(row, opts);
    expect(expected.size).toBeGreaterThanOrEqual(3);
    expect(expected.size).toBeLessThanOrEqual(20);
    expectSameDistribution(empirical(row, { ...opts, repetitionPenalty: 1.0 }, 7, 12000), expected, 0.015);
  });

  test('min-p keeps only tokens at least minP times as likely as the best one', () => {
    for (const minP of [0.05, 0.3, 0.8]) {
      const opts = { temperature: 1, topP: 1, topK: 0, minP };
      const expected = referenceDistribution(row, opts);
      expectSameDistribution(empirical(row, opts, 11, 12000), expected, 0.015);
    }
    // The five-logit row: probabilities ~ [0.35, 0.32, 0.21, 0.08, 0.01] for ids [1, 4, 2, 0, 3].
    const small = Float32Array.from([1.0, 3.0, 2.5, -1.0, 2.9]);
    expect([...empirical(small, { temperature: 1, minP: 0.5 }, 3, 3000).keys()].sort()).toEqual([1, 2, 4]);
    // Token 4 is e^-0.1 = 0.905 times as likely as token 1: below a 0.95 floor.
    expect([...empirical(small, { temperature: 1, minP: 0.95 }, 3, 3000).keys()]).toEqual([1]);
  });

  test('top-k, top-p and temperature combine as in transformers', () => {
    for (const opts of [
      { temperature: 1.3, topP: 0.8, topK: 0, minP: 0 },
      { temperature: 0.4, topP: 1, topK: 5, minP: 0 },
      { temperature: 0.9, topP: 0.7, topK: 12, minP: 0.1 },
    ]) {
      expectSameDistribution(empirical(row, opts, 5, 12000), referenceDistribution(row, opts), 0.015);
    }
  });

  test('the repetition penalty lowers seen tokens: positive logits divided, negative multiplied', () => {
    const small = Float32Array.from([1.0, 3.0, 2.5, -1.0, 2.9]);
    // Greedy: the best token (id 1, logit 3) drops to 2 after a 1.5 penalty, so 2.9 (id 4) wins.
    expect(sampleToken(small, { repetitionPenalty: 1.5 }, createRng(0), [1])).toBe(4);
    expect(sampleToken(small, { repetitionPenalty: 1.0 }, createRng(0), [1])).toBe(1);
    expect(sampleToken(small, {}, createRng(0), [1])).toBe(1);
    // Sampled: the draw follows softmax of the penalised row [1, 2, 2.5, -1.5, 2.9 / 1.5].
    const penalised = Float32Array.from([1.0, 3.0 / 1.5, 2.5, -1.0 * 1.5, 2.9 / 1.5]);
    const opts = { temperature: 1, topP: 1, topK: 0, minP: 0 };
    expectSameDistribution(
      empirical(small, { ...opts, repetitionPenalty: 1.5 }, 9, 30000, [1, 3, 4, 4]),
      referenceDistribution(penalised, opts),
      0.012,
    );
  });

  test('the top-k shortcut keeps exactly the first k of the full sort, ties in id order', () => {
    // Coarse values: many exact ties, the case where the order could depend on the selection method.
    const r = createRng(99);
    const tied = Float32Array.from({ length: 5000 }, () => Math.round(r() * 40) / 4);
    const full = candidateDistribution(tied, { temperature: 1 });
    for (const k of [1, 5, 20, 256]) {
      const top = candidateDistribution(tied, { temperature: 1, topK: k });
      expect(top.ids).toEqual(full.ids.slice(0, k));
      expect(top.weights).toEqual(full.weights.slice(0, k));
    }
  });

  test('temperature 0 stays greedy whatever the other settings say', () => {
    for (let s = 0; s < 10; s++) {
      expect(sampleToken(row, { temperature: 0, topP: 0.5, topK: 3, minP: 0.5 }, createRng(s))).toBe(argmax(row));
    }
  });

  test('a seed reproduces the whole sequence of draws; another seed does not', () => {
    const opts = { temperature: 0.6, topP: 0.95, topK: 20, minP: 0.02, repetitionPenalty: 1.1 };
    const draws = (seed: number) => {
      const r = createRng(seed);
      return Array.from({ length: 200 }, () => sampleToken(row, opts, r, [0, 37, 74]));
    };
    expect(draws(123)).toEqual(draws(123));
    expect(draws(123)).not.toEqual(draws(124));
  });
});

describe('incremental detokenization', () => {
  test('multi-byte characters split over tokens are released whole and the pieces add up', async () => {
    const dir = path.join(root, 'tok');
    await buildTinyModel(dir);
    const tokenizer = await loadTokenizer(dir);
    const text = 'héllo 🐸 wörld <tool_call>\nRead</tool_call> ∑ done';
    const ids = tokenizer.encode(text, { add_special_tokens: false });
    const detok = new IncrementalDetokenizer((x) => tokenizer.decode(x, { skip_special_tokens: false }));
    const pieces = ids.map((id) => detok.push(id));
    pieces.push(detok.flush());
    expect(pieces.join('')).toBe(text);
    expect(pieces.some((p) => p.includes('\uFFFD'))).toBe(false);
    expect(pieces).toContain('<tool_call>');
  });
});
