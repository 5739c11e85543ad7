/**
 * Checks OpenAIBackend against a real llama-server that stalls (SIGSTOP mid-stream) and restarts (SIGTERM, then a
 * new process): prints each visible retry line and when the answer finally comes. Uses the tiny model of
 * scripts/tiny-gguf-for-llama-server.py, with end of turn and <tool_call> banned so it streams a long answer.
 *
 * Usage: npx tsx scripts/llama-server-recovery-check.ts LLAMA_SERVER MODEL.gguf
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { OpenAIBackend } from '../src/inference/openai/index.js';
import { describeRetry } from '../src/inference/retry.js';

const [serverBin, model] = process.argv.slice(2);
if (!serverBin || !model)
  throw new Error('usage: npx tsx scripts/llama-server-recovery-check.ts LLAMA_SERVER MODEL.gguf');
const PORT = 8092;
const start = (): ChildProcess =>
  spawn(
    serverBin,
    [
      '-m',
      model,
      '--alias',
      'frognano-4b',
      '--jinja',
      '-c',
      '8192',
      '--parallel',
      '2',
      '--kv-unified',
      '--port',
      String(PORT),
      '--host',
      '127.0.0.1',
      '-t',
      '2',
    ],
    { stdio: 'ignore' },
  );
const t0 = Date.now();
const at = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
let server = start();
await new Promise((r) => setTimeout(r, 2500));
const b = new OpenAIBackend({
  baseUrl: `http://127.0.0.1:${PORT}/v1`,
  model: 'frognano-4b',
  stallTimeoutMs: 2000,
  extraBody: { logit_bias: { '263': -100, '264': -100 } },
  onRetry: (i) => console.log(`[${at()}] ${describeRetry(i)}`),
});
const msgs = [{ role: 'user' as const, content: 'Write a lot.' }];

console.log(`[${at()}] 1) stalled server: SIGSTOP 1 s into a streamed answer, SIGCONT at 9 s`);
setTimeout(() => {
  server.kill('SIGSTOP');
  console.log(`[${at()}] SIGSTOP`);
}, 1000);
setTimeout(() => {
  server.kill('SIGCONT');
  console.log(`[${at()}] SIGCONT`);
}, 9000);
let r = await b.generate(msgs, [], { maxNewTokens: 1500 });
console.log(`[${at()}] answer: ${r.finishReason}, ${r.completionTokens} tokens, context ${b.info().contextLength}`);

console.log(`[${at()}] 2) restart: SIGTERM at +0.5 s, a new server at +6 s`);
setTimeout(() => {
  server.kill('SIGTERM');
  console.log(`[${at()}] server stopped`);
}, 500);
setTimeout(() => {
  server = start();
  console.log(`[${at()}] server starting`);
}, 6000);
await new Promise((r) => setTimeout(r, 1000));
r = await b.generate(msgs, [], { maxNewTokens: 200 });
console.log(`[${at()}] answer: ${r.finishReason}, ${r.completionTokens} tokens`);
server.kill('SIGTERM');
