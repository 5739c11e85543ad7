/**
 * Peak memory of a long prefill on a graph that returns logits for every position (as the hub's Qwen3.5 exports
 * do: no num_logits_to_keep input), with Qwen3.5's real vocabulary size of 248,320.
 *   before: 512-token prefill chunks whatever the vocabulary (the earlier behaviour): ~509 MB of logits per run
 *   after : chunks cut to the logits budget (64 MiB by default)
 * Each mode runs in its own process so its peak RSS is its own. The model (random weights, Qwen3.5-like hybrid
 * layout, hidden size 32, embedding and LM head padded to the real vocabulary) is built at bench time.
 *
 * Usage: npx tsx bench/onnx-prefill-memory.ts [--tokens 16384] [--vocab 248320]
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildTinyModel } from '../test/support/tinyModel/buildTinyModel.js';
import { OnnxBackend } from '../src/inference/onnx/backend.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const MiB = 1024 * 1024;

interface ChildResult {
  mode: string;
  chunk: number;
  tokens: number;
  loadedRssMiB: number;
  peakRssMiB: number;
  seconds: number;
}

/** In the child: load, prefill `tokens` tokens once, report the peak RSS of this process. */
async function child(dir: string, mode: string, tokens: number): Promise<void> {
  const backend = await OnnxBackend.load(dir, {
    prefixCache: false,
    intraOpNumThreads: 2,
    ...(mode === 'before' ? { prefillLogitsBudgetBytes: Infinity } : {}),
  });
  const loadedRssMiB = process.resourceUsage().maxRSS / 1024;
  const vocab = backend.tokenizer.get_vocab().size;
  // Ordinary token ids of the tokenizer (the padded rows are never produced by it).
  const ids = Array.from({ length: tokens }, (_, i) => (i * 7919) % Math.min(vocab, 300));
  const started = Date.now();
  await backend.decoder.forward(ids, backend.decoder.newState());
  const result: ChildResult = {
    mode,
    chunk: backend.decoder.prefillChunkSize,
    tokens,
    loadedRssMiB,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
    seconds: (Date.now() - started) / 1000,
  };
  await backend.close();
  console.log(JSON.stringify(result));
}

async function main(): Promise<void> {
  if (args[0] === '--child') return child(args[1]!, args[2]!, Number(args[3]));
  const tokens = opt('tokens', 16384);
  const vocab = opt('vocab', 248320);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'onnx-prefill-mem-'));
  try {
    await buildTinyModel(dir, {
      hiddenSize: 32,
      intermediateSize: 64,
      layerTypes: ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention'],
      numAttentionHeads: 2,
      headDim: 16,
      linearNumHeads: 2,
      linearKeyHeadDim: 16,
      linearValueHeadDim: 16,
      vocabSize: vocab,
    });
    const self = fileURLToPath(import.meta.url);
    console.log(`prefill of ${tokens} tokens, vocabulary ${vocab}, logits for every position (no num_logits_to_keep)`);
    for (const mode of ['before', 'after']) {
      const out = execFileSync(process.execPath, [...process.execArgv, self, '--child', dir, mode, String(tokens)], {
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      });
      const r = JSON.parse(out.trim().split('\n').pop()!) as ChildResult;
      const logitsMiB = (r.chunk * vocab * 4) / MiB;
      console.log(
        `  ${r.mode.padEnd(6)}: chunk ${String(r.chunk).padStart(3)} tokens (${logitsMiB.toFixed(0)} MiB of logits per run), ` +
          `peak RSS ${r.peakRssMiB.toFixed(0)} MiB (${r.loadedRssMiB.toFixed(0)} MiB after loading), prefill ${r.seconds.toFixed(1)} s`,
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
