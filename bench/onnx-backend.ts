/**
 * Benchmark of the onnx backend on a locally built tiny model (random weights, Qwen3.5-like hybrid layout):
 *  1. decode speed of OnnxBackend.generate() vs a bare onnxruntime session.run loop on the same model and prompt,
 *     i.e. what the backend's tokenizer, template, sampling, streaming and parsing cost on top of the graph;
 *  2. prefill tokens per simulated agent trajectory with and without prefix reuse.
 *
 * Usage: npx tsx bench/onnx-backend.ts [--hidden 256] [--layers 8] [--tokens 128] [--turns 8] [--threads N] [--repeats 3]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as ort from 'onnxruntime-node';
import { buildTinyModel, type LayerType } from '../test/support/tinyModel/buildTinyModel.js';
import { OnnxBackend } from '../src/inference/onnx/backend.js';
import { encodePrompt } from '../src/inference/onnx/tokenizer.js';
import type { ChatMessage, ToolSpec } from '../src/inference/types.js';
import { summarize } from './lib.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const hidden = opt('hidden', 256);
const layers = opt('layers', 8);
const newTokens = opt('tokens', 128);
const turns = opt('turns', 8);
const threads = opt('threads', 0);
const repeats = opt('repeats', 3);
const heads = 4;

const TOOLS: ToolSpec[] = ['Read', 'Write', 'Edit', 'Glob', 'Bash'].map((name) => ({
  type: 'function',
  function: {
    name,
    description: `The ${name} tool of the Leaf harness.`,
    parameters: {
      type: 'object',
      properties: { file_path: { type: 'string', description: 'Repository-relative path.' } },
      required: ['file_path'],
    },
  },
}));

const BASE: ChatMessage[] = [
  { role: 'system', content: 'You are a software engineering agent working in a checked-out repository.' },
  { role: 'user', content: 'Make the tests pass.' },
];

interface Timing {
  wall: number;
  /** Process CPU time (all threads): far less disturbed than wall time when other work shares the machine. */
  cpu: number;
}

function startTimer(): () => Timing {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  return () => {
    const used = process.cpuUsage(cpu);
    return { wall: performance.now() - wall, cpu: (used.user + used.system) / 1000 };
  };
}

/** A plain greedy loop with hand-written feeds: the floor any backend pays for the graph itself. */
async function bareLoop(session: ort.InferenceSession, promptIds: number[], steps: number): Promise<Timing> {
  const feeds: Record<string, ort.Tensor> = {};
  for (const m of session.inputMetadata as readonly { name: string; shape: readonly (number | string)[] }[]) {
    if (!m.name.startsWith('past_')) continue;
    const dims = m.shape.map((d, i) => (typeof d === 'number' ? d : i === 0 ? 1 : 0));
    feeds[m.name] = new ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);
  }
  let ids = promptIds;
  let past = 0;
  const stop = startTimer();
  for (let step = 0; step <= steps; step++) {
    const n = ids.length;
    feeds.input_ids = new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]);
    feeds.attention_mask = new ort.Tensor('int64', new BigInt64Array(past + n).fill(1n), [1, past + n]);
    feeds.position_ids = new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: n }, (_, i) => BigInt(past + i)),
      [1, n],
    );
    const out = await session.run(feeds);
    for (const name of session.outputNames) {
      if (name === 'logits') continue;
      feeds[name.startsWith('present.') ? `past_key_values.${name.slice(8)}` : name.replace('present_', 'past_')] =
        out[name]!;
    }
    const logits = out.logits!.data as Float32Array;
    const vocab = out.logits!.dims[2]!;
    let best = 0;
    for (let i = 1; i < vocab; i++)
      if (logits[logits.length - vocab + i]! > logits[logits.length - vocab + best]!) best = i;
    past += n;
    ids = [best];
  }
  return stop();
}

const fmt = (x: number) => x.toFixed(1);

async function main() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'onnx-bench-'));
  try {
    const layerTypes: LayerType[] = Array.from({ length: layers }, (_, i) =>
      i % 4 === 3 ? 'full_attention' : 'linear_attention',
    );
    await buildTinyModel(dir, {
      hiddenSize: hidden,
      intermediateSize: 2 * hidden,
      layerTypes,
      numAttentionHeads: heads,
      headDim: hidden / heads,
      linearNumHeads: heads,
      linearKeyHeadDim: hidden / heads,
      linearValueHeadDim: hidden / heads,
      numMerges: 200,
    });
    const sessionOpts = threads ? { intraOpNumThreads: threads } : {};
    console.log(
      `model: hidden ${hidden}, ${layers} layers (${layerTypes.filter((t) => t === 'full_attention').length} full attention), onnxruntime ${ort.env.versions.common}, cpu threads ${threads || 'default'}`,
    );

    // --- 1. decode speed ------------------------------------------------------------------------------
    const backend = await OnnxBackend.load(dir, { prefixCache: false, ...sessionOpts });
    const promptIds = encodePrompt(backend.tokenizer, backend.renderPrompt(BASE, TOOLS));
    await backend.generate(BASE, TOOLS, { temperature: 0, maxNewTokens: 8 }); // warm-up
    const time = async (n: number) => {
      const stop = startTimer();
      const r = await backend.generate(BASE, TOOLS, { temperature: 0, maxNewTokens: n });
      return { ...stop(), tokens: r.completionTokens };
    };
    const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
      graphOptimizationLevel: 'all',
      ...sessionOpts,
    });
    const probe = await time(newTokens);
    const generated = probe.tokens; // the random model may end its turn early; both loops run this many steps
    await bareLoop(session, promptIds, 8); // warm-up
    // Interleaved repetitions, medians: the machine may be shared, so single timings are noisy.
    const runs = { one: [] as Timing[], many: [] as Timing[], bareOne: [] as Timing[], bareMany: [] as Timing[] };
    for (let rep = 0; rep < repeats; rep++) {
      runs.bareOne.push(await bareLoop(session, promptIds, 0));
      runs.one.push(await time(1));
      runs.bareMany.push(await bareLoop(session, promptIds, generated - 1));
      runs.many.push(await time(generated));
    }
    const median = (xs: Timing[], key: keyof Timing) => summarize(xs.map((x) => x[key])).median;
    const decodeRate = (total: number, first: number) => ((generated - 1) / (total - first)) * 1000;
    console.log(
      `\nprompt ${promptIds.length} tokens, ${generated} new tokens (greedy), median of ${repeats} interleaved runs`,
    );
    for (const key of ['wall', 'cpu'] as const) {
      const [one, many, bareOne, bareMany] = [
        median(runs.one, key),
        median(runs.many, key),
        median(runs.bareOne, key),
        median(runs.bareMany, key),
      ];
      console.log(` ${key} time:`);
      console.log(
        `  bare session.run loop : end-to-end ${fmt(bareMany)} ms, first token ${fmt(bareOne)} ms, decode ${fmt(decodeRate(bareMany, bareOne))} tok/s`,
      );
      console.log(
        `  OnnxBackend.generate  : end-to-end ${fmt(many)} ms, first token ${fmt(one)} ms, decode ${fmt(decodeRate(many, one))} tok/s`,
      );
      console.log(
        `  backend overhead      : ${fmt(((many - bareMany) / bareMany) * 100)}% end-to-end, ${fmt(((many - one - (bareMany - bareOne)) / (generated - 1)) * 1000)} us per decoded token`,
      );
    }
    await backend.close();
    await session.release();

    // --- 2. prefix reuse over an agent trajectory ------------------------------------------------------
    const toolOutput = (turn: number) =>
      `Exit code: ${turn % 2}\nSTDOUT:\n` +
      Array.from(
        { length: 12 },
        (_, i) => `${i + 1}. export function step${turn}_${i}(value: number): number { return value * ${i}; }`,
      ).join('\n');
    const trajectory = async (prefixCache: boolean) => {
      const b = await OnnxBackend.load(dir, { prefixCache, ...sessionOpts });
      const messages = [...BASE];
      let prompt = 0;
      let prefill = 0;
      const stop = startTimer();
      for (let turn = 0; turn < turns; turn++) {
        const r = await b.generate(messages, TOOLS, { temperature: 0, maxNewTokens: 32 });
        prompt += r.promptTokens;
        prefill += r.prefillTokens;
        messages.push(
          {
            role: 'assistant',
            content: '',
            reasoning: r.message.reasoning,
            tool_calls: [{ id: `c${turn}`, name: 'Bash', arguments: { command: `npm test -- part${turn}` } }],
          },
          { role: 'tool', content: toolOutput(turn), tool_call_id: `c${turn}`, name: 'Bash' },
        );
      }
      const time = stop();
      await b.close();
      return { prompt, prefill, ...time };
    };
    const without = await trajectory(false);
    const withReuse = await trajectory(true);
    console.log(
      `\nagent trajectory: ${turns} turns, <=32 new tokens per turn, ~${Math.round(without.prompt / turns)} prompt tokens per turn on average`,
    );
    console.log(
      `  without prefix reuse : ${without.prefill} prefill tokens of ${without.prompt} prompt tokens, wall ${fmt(without.wall)} ms, cpu ${fmt(without.cpu)} ms`,
    );
    console.log(
      `  with prefix reuse    : ${withReuse.prefill} prefill tokens of ${withReuse.prompt} prompt tokens, wall ${fmt(withReuse.wall)} ms, cpu ${fmt(withReuse.cpu)} ms`,
    );
    console.log(
      `  prefill saved        : ${fmt((1 - withReuse.prefill / without.prefill) * 100)}% of prefill tokens, ${fmt((1 - withReuse.wall / without.wall) * 100)}% of wall time, ${fmt((1 - withReuse.cpu / without.cpu) * 100)}% of cpu time`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
