/**
 * How FrogNano-4B is served and how frognano is pointed at it: the lines `frognano model pull` and `model export`
 * print, and the ones README.md and docs/inference.md show (test/deploy/docs.test.ts checks the docs carry these
 * exact lines, so the printed hint and the docs cannot drift apart).
 *
 * The context is upstream Leaf's: `max_context_tokens: 65536` in frognano/configs/eval/swebench-verified.yaml
 * (microsoft/FrogNano; also EvalConfig's default in frognano/config.py), with `max_tokens_per_turn: null`, i.e. each
 * answer may use what the context leaves, which is what the client asks for (it clamps max_tokens to it).
 */
import { VLLM_TOOL_FLAGS } from '../../inference/openai/probes.js';

export const SERVED_MODEL_NAME = 'frognano-4b';
/** Upstream Leaf's context budget per agent loop. */
export const LEAF_CONTEXT_TOKENS = 65536;
export const SERVER_PORT = 8000;

/** `vllm serve` for the Hugging Face directory `dir`: tool parser qwen3_coder, reasoning parser qwen3. */
export function vllmServeLines(dir: string): string[] {
  return [
    `vllm serve ${dir} --served-model-name ${SERVED_MODEL_NAME} --max-model-len ${LEAF_CONTEXT_TOKENS} \\`,
    `  --enable-prefix-caching ${VLLM_TOOL_FLAGS} \\`,
    `  --enable-prompt-tokens-details --max-num-seqs 16 --port ${SERVER_PORT}`,
  ];
}

/** SGLang's server for the same directory, with its parsers for the same formats. */
export function sglangLines(dir: string): string[] {
  return [
    `python -m sglang.launch_server --model-path ${dir} --served-model-name ${SERVED_MODEL_NAME} \\`,
    `  --context-length ${LEAF_CONTEXT_TOKENS} --tool-call-parser qwen3_coder --reasoning-parser qwen3 --port ${SERVER_PORT}`,
  ];
}

/**
 * llama.cpp's server for a GGUF: --jinja renders the chat template and parses the tool calls; the template is the
 * model's own file; -c is shared by the --parallel slots, so each loop gets LEAF_CONTEXT_TOKENS.
 */
export function llamaServerLines(gguf: string, template: string, slots = 4): string[] {
  return [
    `llama-server -m ${gguf} --alias ${SERVED_MODEL_NAME} --jinja \\`,
    `  --chat-template-file ${template} -c ${slots * LEAF_CONTEXT_TOKENS} --parallel ${slots} --port ${SERVER_PORT}`,
  ];
}

/** What the runner and the CLI set to use a server started by one of the lines above. */
export function openaiEnvLine(host = '127.0.0.1'): string {
  return `export FROGNANO_BACKEND=openai FROGNANO_OPENAI_BASE_URL=http://${host}:${SERVER_PORT}/v1 FROGNANO_OPENAI_MODEL=${SERVED_MODEL_NAME}`;
}

/** What the runner and the CLI set to use an exported ONNX directory in-process. */
export function onnxEnvLine(dir: string, dtype: string): string {
  return `export FROGNANO_BACKEND=onnx FROGNANO_MODEL_DIR=${dir} FROGNANO_ONNX_DTYPE=${dtype}`;
}
