/** The OpenAI-compatible backend's public names; the rest of openai/ is its inside. */
export {
  OpenAIBackend,
  VLLM_TOOL_FLAGS,
  type OpenAIBackendOptions,
  type PingResult,
  type ToolCallProbeResult,
} from './backend.js';
export { overestimatePromptTokens } from './tokens.js';
export { toWireMessage } from './wire.js';
