/**
 * Host<->device bytes per decode step of the in-process CUDA path, from a model config, beside the server path.
 *
 * onnxruntime-node has no device-resident outputs for the CUDA execution provider, so every decode step sends each
 * `past_*` tensor to the GPU and brings each `present_*` back: the attention KV of the full-attention layers (which
 * grows with the context) plus the fixed conv and recurrent states of the linear-attention layers, plus the logits.
 * A serving engine (vLLM, SGLang, llama.cpp) keeps all of that on the GPU and moves only token ids per step.
 * Also prints how many agent loops one GPU holds on the server path (KV budget / per-sequence state).
 *
 * Shapes follow src/inference/onnx/stateLayout.ts. Defaults: FrogNano-4B = Qwen3.5-4B's text config (32 layers,
 * full attention every 4th layer, 4 KV heads of dim 256, gated delta net with 16 key / 32 value heads of dim 128,
 * conv kernel 4, vocab 248320).
 *
 * Usage: npx tsx bench/gpu-state-bytes.ts [--config config.json] [--state-bytes 2] [--gpu-gib 80] [--weights-gib 9]
 *        [--gpu-util 0.9] [--pcie-gbps 25]
 */
import { readFileSync } from 'node:fs';

export interface StateConfig {
  num_hidden_layers: number;
  /** Every Nth layer is full attention; the rest are linear attention. Ignored when layer_types is given. */
  full_attention_interval?: number;
  layer_types?: string[];
  num_key_value_heads: number;
  head_dim: number;
  linear_num_key_heads?: number;
  linear_num_value_heads?: number;
  linear_key_head_dim?: number;
  linear_value_head_dim?: number;
  linear_conv_kernel_dim?: number;
  vocab_size: number;
}

export const FROGNANO_4B: StateConfig = {
  num_hidden_layers: 32,
  full_attention_interval: 4,
  num_key_value_heads: 4,
  head_dim: 256,
  linear_num_key_heads: 16,
  linear_num_value_heads: 32,
  linear_key_head_dim: 128,
  linear_value_head_dim: 128,
  linear_conv_kernel_dim: 4,
  vocab_size: 248320,
};

export function layerCounts(c: StateConfig): { full: number; linear: number } {
  const types =
    c.layer_types ??
    Array.from({ length: c.num_hidden_layers }, (_, i) =>
      !c.full_attention_interval || (i + 1) % c.full_attention_interval === 0 ? 'full_attention' : 'linear_attention',
    );
  const full = types.filter((t) => t === 'full_attention').length;
  return { full, linear: types.length - full };
}

/** K and V of every full-attention layer, per token of context. */
export function kvBytesPerToken(c: StateConfig, bytes: number): number {
  return layerCounts(c).full * 2 * c.num_key_value_heads * c.head_dim * bytes;
}

/** Conv ([q|k|v] channels x kernel) and recurrent (value heads x key dim x value dim) state of all linear layers. */
export function linearStateBytes(c: StateConfig, bytes: number): number {
  const kH = c.linear_num_key_heads ?? 0;
  const vH = c.linear_num_value_heads ?? kH;
  const kD = c.linear_key_head_dim ?? 0;
  const vD = c.linear_value_head_dim ?? kD;
  const conv = (2 * kH * kD + vH * vD) * (c.linear_conv_kernel_dim ?? 0);
  const recurrent = vH * kD * vD;
  return layerCounts(c).linear * (conv + recurrent) * bytes;
}

/** One decode step at `context` tokens: past_* in, present_* (one token longer) and fp32 logits out. */
export function inProcessStepBytes(
  c: StateConfig,
  context: number,
  bytes: number,
): { toDevice: number; toHost: number } {
  const kv = kvBytesPerToken(c, bytes);
  const fixed = linearStateBytes(c, bytes);
  return { toDevice: kv * context + fixed + 8, toHost: kv * (context + 1) + fixed + c.vocab_size * 4 };
}

/** A serving engine keeps the state on the GPU: the next token id in, the sampled id out (int64 each). */
export const SERVER_STEP_BYTES = 16;

function fmt(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n >= 100 || i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
}

function main(): void {
  const args = process.argv.slice(2);
  const opt = (name: string, dflt: number) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? Number(args[i + 1]) : dflt;
  };
  const file = args.includes('--config') ? args[args.indexOf('--config') + 1] : undefined;
  const raw = file ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
  const cfg: StateConfig = raw ? { ...FROGNANO_4B, ...(raw.text_config ?? raw) } : FROGNANO_4B;
  const bytes = opt('state-bytes', 2);
  const gpuGiB = opt('gpu-gib', 80);
  const weightsGiB = opt('weights-gib', 9);
  const util = opt('gpu-util', 0.9);
  const pcie = opt('pcie-gbps', 25) * 1e9;

  const { full, linear } = layerCounts(cfg);
  const kv = kvBytesPerToken(cfg, bytes);
  const fixed = linearStateBytes(cfg, bytes);
  console.log(
    `model: ${file ?? 'FrogNano-4B (Qwen3.5-4B text config)'}; ${full} full-attention + ${linear} linear-attention layers; state ${bytes * 8}-bit`,
  );
  console.log(
    `KV per token: ${fmt(kv)}; linear-attention state (fixed): ${fmt(fixed)}; logits per step: ${fmt(cfg.vocab_size * 4)}\n`,
  );
  console.log(
    'context   in-process CUDA: to GPU   to host    per step   copy time @%d GB/s   server path per step',
    pcie / 1e9,
  );
  for (const context of [8192, 32768, 131072]) {
    const s = inProcessStepBytes(cfg, context, bytes);
    const total = s.toDevice + s.toHost;
    console.log(
      `${String(context / 1024).padStart(4)}K     ${fmt(s.toDevice).padStart(20)} ${fmt(s.toHost).padStart(10)} ${fmt(total).padStart(10)} ${`${((total / pcie) * 1000).toFixed(1)} ms`.padStart(20)}   ${SERVER_STEP_BYTES} B (token ids)`,
    );
  }
  const budget = (gpuGiB * util - weightsGiB) * 2 ** 30;
  console.log(
    `\nserver path, one ${gpuGiB} GiB GPU at ${util} utilisation, ${weightsGiB} GiB weights: ${fmt(budget)} for state`,
  );
  for (const context of [16384, 32768, 65536]) {
    const perSeq = kv * context + fixed;
    console.log(
      `  ${String(context / 1024).padStart(3)}K-token contexts: ${fmt(perSeq)} each -> ${Math.floor(budget / perSeq)} concurrent agent loops`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main();
