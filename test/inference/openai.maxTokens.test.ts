/**
 * Which max_tokens the OpenAI request carries (issue #19). Upstream Leaf sends `max_completion_tokens` only when
 * `max_tokens_per_turn` is set, and its eval configs set it to null: no cap, the server stops at its context end.
 * So a cap goes out only when one is configured, or when the usable context ends before the server's (then the
 * reason goes to the debug log).
 */
import { OpenAIBackend, type OpenAIBackendOptions } from '../../src/inference/openai/index.js';
import type { ChatMessage, ToolSpec } from '../../src/inference/types.js';
import { ScriptedServer, loadFixture, router } from './modelServerReplay.js';

const vllm = (name: string) => loadFixture('vllm', name);

const TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'Bash',
      description: 'Run a command',
      parameters: { type: 'object', properties: { command: { type: 'string' } } },
    },
  },
];
const MESSAGES: ChatMessage[] = [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Fix the CRLF bug in src/io.py.' },
];

/** vLLM with max_model_len 8192 that counts 2100 prompt tokens. */
const VLLM_ROUTES = { '/v1/models': vllm('models'), '/tokenize': vllm('tokenize') };
/** A server that counts the prompt (2100 tokens) but names no context length anywhere. */
const COUNT_ONLY_ROUTES = {
  '/tokenize': { ...vllm('tokenize'), body: '{"count":2100,"tokens":[],"token_strs":null}' },
};

const server = new ScriptedServer();
beforeAll(() => server.start());
afterAll(() => server.stop());

function backend(extra: Partial<OpenAIBackendOptions> = {}): { b: OpenAIBackend; debug: string[] } {
  const debug: string[] = [];
  const b = new OpenAIBackend({
    baseUrl: server.url,
    model: 'frognano-4b',
    stream: false,
    onDebug: (m) => debug.push(m),
    ...extra,
  });
  return { b, debug };
}

describe('max_tokens in the chat-completion request', () => {
  test('by default (no per-turn cap, the server enforces the context) the request has no max_tokens', async () => {
    server.script(router(VLLM_ROUTES, [vllm('final-answer')]));
    const { b, debug } = backend();
    await b.generate(MESSAGES, TOOLS, {});
    expect(b.info().contextLength).toBe(8192);
    expect(server.chats[0]!.body).not.toHaveProperty('max_tokens');
    expect(debug).toEqual([]);
  });

  test('with no context known at all the request has no max_tokens either', async () => {
    server.script(router({}, [vllm('final-answer')]));
    const { b, debug } = backend();
    await b.generate(MESSAGES, TOOLS, {});
    expect(b.info().contextLength).toBeUndefined();
    expect(server.chats[0]!.body).not.toHaveProperty('max_tokens');
    expect(debug).toEqual([]);
  });

  test('a configured per-turn cap is sent as it is when the context has room for it', async () => {
    server.script(router(VLLM_ROUTES, [vllm('final-answer')]));
    const { b, debug } = backend();
    await b.generate(MESSAGES, TOOLS, { maxNewTokens: 4096 });
    expect(server.chats[0]!.body.max_tokens).toBe(4096);
    expect(debug).toEqual([]);
  });

  test('a configured cap with no context known is sent as it is', async () => {
    server.script(router({}, [vllm('final-answer')]));
    const { b } = backend();
    await b.generate(MESSAGES, TOOLS, { maxNewTokens: 512 });
    expect(server.chats[0]!.body.max_tokens).toBe(512);
  });

  test('a configured cap larger than the room the prompt leaves is clamped to it, and the log says why', async () => {
    server.script(router(VLLM_ROUTES, [vllm('final-answer')]));
    const { b, debug } = backend();
    await b.generate(MESSAGES, TOOLS, { maxNewTokens: 8000 });
    expect(server.chats[0]!.body.max_tokens).toBe(8192 - 2100);
    expect(debug).toEqual([
      'max_tokens 6092, not the per-turn cap 8000: the prompt (2100 tokens) leaves that much of the 8192-token context',
    ]);
  });

  test("an operator context below the server's forces a cap: the prompt plus the room left is that context (debug log)", async () => {
    server.script(router(VLLM_ROUTES, [vllm('final-answer')]));
    const { b, debug } = backend({ contextLength: 4096 });
    await b.generate(MESSAGES, TOOLS, {});
    expect(server.chats[0]!.body.max_tokens).toBe(4096 - 2100);
    expect(debug).toEqual([
      'max_tokens 1996 (no per-turn cap): the prompt (2100 tokens) leaves that much of the 4096-token context, ' +
        "which ends before the server's (8192 tokens)",
    ]);
  });

  test('an operator context on a server that names none forces a cap too (it might run on past it)', async () => {
    server.script(router(COUNT_ONLY_ROUTES, [vllm('final-answer')]));
    const { b, debug } = backend({ contextLength: 4096 });
    await b.generate(MESSAGES, TOOLS, {});
    expect(server.chats[0]!.body.max_tokens).toBe(4096 - 2100);
    expect(debug).toEqual([expect.stringContaining("ends before the server's (unknown)")]);
  });

  test("an operator context above the server's: the server stops in time, no max_tokens", async () => {
    server.script(router(VLLM_ROUTES, [vllm('final-answer')]));
    const { b, debug } = backend({ contextLength: 131072 });
    await b.generate(MESSAGES, TOOLS, {});
    expect(b.info().contextLength).toBe(8192);
    expect(server.chats[0]!.body).not.toHaveProperty('max_tokens');
    expect(debug).toEqual([]);
  });

  test('an operator context with only an estimate of the prompt sends no cap (an over-estimate would cut the turn short)', async () => {
    server.script(router({}, [vllm('final-answer')]));
    const { b, debug } = backend({ contextLength: 4096 });
    await b.generate(MESSAGES, TOOLS, {});
    expect(server.chats[0]!.body).not.toHaveProperty('max_tokens');
    expect(debug).toEqual([]);
  });
});
