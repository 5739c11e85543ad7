/**
 * OpenAIBackend against recorded model-server responses (test/fixtures/model-servers/): vLLM with
 * `--tool-call-parser qwen3_coder --reasoning-parser qwen3` (shaped from its source, scripts/shape-vllm-responses.py)
 * and llama.cpp's `llama-server --jinja` (recorded from a real server, scripts/record-llama-server.sh), replayed from
 * a real HTTP server, one test per case the client must survive.
 */
import { OpenAIBackend, type OpenAIBackendOptions } from '../../src/inference/openai/index.js';
import type { RetryInfo } from '../../src/inference/retry.js';
import { ContextOverflowError, type ChatMessage, type ToolSpec } from '../../src/inference/types.js';
import {
  ScriptedServer,
  loadFixture,
  rejection,
  replay,
  router,
  testBackend,
  type HttpFixture,
} from './modelServerReplay.js';

const vllm = (name: string) => loadFixture('vllm', name);
const llamacpp = (name: string) => loadFixture('llamacpp', name);

const TOOLS: ToolSpec[] = ['Bash', 'Read', 'Write'].map((name) => ({
  type: 'function',
  function: {
    name,
    description: name,
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string' },
        file_path: { type: 'string' },
        content: { type: 'string' },
        offset: { type: 'integer' },
        limit: { type: 'integer' },
      },
    },
  },
}));
const MESSAGES: ChatMessage[] = [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Fix the CRLF bug in src/io.py.' },
];

const server = new ScriptedServer();
beforeAll(() => server.start());
afterAll(() => server.stop());

const backend = (extra: Partial<OpenAIBackendOptions> = {}) => testBackend(server, extra);

/** The two calls of the CRLF cases (run the failing test, read the file) as the backend returns them, with their ids. */
const ioCalls = (bashId: string, readId: string) => [
  {
    id: bashId,
    name: 'Bash',
    arguments: { command: 'python -m pytest tests/test_io.py -x -q', description: 'Run the failing test' },
    argumentsText: expect.any(String),
  },
  {
    id: readId,
    name: 'Read',
    arguments: { file_path: '/repo/src/io.py', offset: 40, limit: 30 },
    argumentsText: expect.any(String),
  },
];

/** vLLM with max_model_len 8192 that counts 2100 prompt tokens. */
const VLLM_ROUTES = { '/v1/models': vllm('models'), '/tokenize': vllm('tokenize') };
const NO_DISCOVERY = {};

describe('vLLM (qwen3_coder tool parser, qwen3 reasoning parser)', () => {
  test("sends upstream Leaf's eval sampling and max_tokens clamped to the server's context", async () => {
    server.script(router(VLLM_ROUTES, [vllm('final-answer')]));
    const b = backend({ stream: false });
    await b.generate(MESSAGES, TOOLS, {
      maxNewTokens: 8192,
      temperature: 0.6,
      topP: 0.95,
      topK: 20,
      minP: 0,
      repetitionPenalty: 1,
      parallelToolCalls: true,
      enableThinking: true,
      seed: 42,
    });
    expect(b.info().contextLength).toBe(8192);
    const { messages: _m, tools: _t, ...body } = server.chats[0]!.body;
    expect(body).toEqual({
      model: 'frognano-4b',
      tool_choice: 'auto',
      temperature: 0.6,
      parallel_tool_calls: true,
      max_tokens: 8192 - 2100,
      top_p: 0.95,
      top_k: 20,
      min_p: 0,
      repetition_penalty: 1,
      chat_template_kwargs: { enable_thinking: true },
      seed: 42,
    });
    // The prompt is counted as it will be rendered (enable_thinking changes the generation prompt's tokens).
    expect(server.requests.find((r) => r.path === '/tokenize')!.body).toMatchObject({
      add_generation_prompt: true,
      chat_template_kwargs: { enable_thinking: true },
    });
  });

  test("an operator context setting below the server's wins; the server's caps a larger one", async () => {
    server.script(router(VLLM_ROUTES, [vllm('final-answer')]));
    const small = backend({ stream: false, contextLength: 4096 });
    await small.generate(MESSAGES, TOOLS, { maxNewTokens: 8192 });
    expect(small.info().contextLength).toBe(4096);
    expect(server.chats[0]!.body.max_tokens).toBe(4096 - 2100);

    server.script(router(VLLM_ROUTES, [vllm('final-answer')]));
    const large = backend({ stream: false, contextLength: 131072 });
    await large.generate(MESSAGES, TOOLS, {});
    expect(large.info().contextLength).toBe(8192);
    expect(server.chats[0]!.body).not.toHaveProperty('max_tokens'); // no per-turn cap: the server stops at its own context end
  });

  test('parsed tool calls with reasoning_content; raw text keeps the calls in the form the model wrote', async () => {
    server.script(router(VLLM_ROUTES, [vllm('tool-calls')]));
    const r = await backend({ stream: false }).generate(MESSAGES, TOOLS, { maxNewTokens: 4096 });
    expect(r.message).toEqual({
      role: 'assistant',
      content: '',
      reasoning: 'The test reads a CRLF file; check how read() opens it.',
      tool_calls: ioCalls(
        'chatcmpl-tool-0d6f3a1b2c4e4f5a8b9c0d1e2f3a4b5c',
        'chatcmpl-tool-7e8f9a0b1c2d4e3f8a9b0c1d2e3f4a5b',
      ),
    });
    expect(r).toMatchObject({
      finishReason: 'tool_calls',
      promptTokens: 5123,
      prefillTokens: 131,
      completionTokens: 188,
      parseErrors: [],
    });
    expect(r.rawText).toBe(
      '<think>\nThe test reads a CRLF file; check how read() opens it.\n\n</think>\n\n\n\n' +
        '<tool_call>\n<function=Bash>\n<parameter=command>\npython -m pytest tests/test_io.py -x -q\n</parameter>\n' +
        '<parameter=description>\nRun the failing test\n</parameter>\n</function>\n</tool_call>\n' +
        '<tool_call>\n<function=Read>\n<parameter=file_path>\n/repo/src/io.py\n</parameter>\n<parameter=offset>\n40\n</parameter>\n' +
        '<parameter=limit>\n30\n</parameter>\n</function>\n</tool_call>',
    );
  });

  test('vLLM >= 0.11 names the field `reasoning`', async () => {
    server.script(router(VLLM_ROUTES, [vllm('tool-calls-reasoning-field')]));
    const r = await backend({ stream: false }).generate(MESSAGES, TOOLS);
    expect(r.message.reasoning).toBe('Run the tests first.');
    expect(r.message.tool_calls).toEqual([
      { id: expect.any(String), name: 'Bash', arguments: { command: 'ls' }, argumentsText: '{"command": "ls"}' },
    ]);
  });

  test('a Write cut off at max_tokens is reported as length and never returned as a call (non-streamed)', async () => {
    server.script(router(VLLM_ROUTES, [vllm('truncated-tool-call')]));
    const r = await backend({ stream: false }).generate(MESSAGES, TOOLS, { maxNewTokens: 64 });
    expect(server.chats[0]!.body.max_tokens).toBe(64);
    expect(r.finishReason).toBe('length');
    expect(r.message.tool_calls).toBeUndefined();
    expect(r.parseErrors).toEqual([]);
    expect(r.rawText).toContain('<parameter=content>\ndef read(path):\n    with open(pa\n</parameter>');
  });

  test('streamed: reasoning and content deltas, tool-call fragments assembled, usage from the last chunk', async () => {
    server.script(router(VLLM_ROUTES, [vllm('stream-tool-calls')]));
    const deltas: string[] = [];
    const r = await backend().generate(MESSAGES, TOOLS, { maxNewTokens: 4096, onToken: (d) => deltas.push(d) });
    expect(server.chats[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(deltas.join('')).toBe('The test reads a CRLF file.\n\n\n');
    expect(r.message.tool_calls).toEqual(ioCalls('call_5f6a7b8c9d0e1f2a3b4c5d6e', 'call_0a1b2c3d4e5f6a7b8c9d0e1f'));
    expect(r).toMatchObject({
      finishReason: 'tool_calls',
      promptTokens: 5123,
      prefillTokens: 131,
      completionTokens: 188,
    });
  });

  test('streamed by default even without onToken (so stalls are seen)', async () => {
    server.script(router(VLLM_ROUTES, [vllm('stream-tool-calls')]));
    const r = await backend().generate(MESSAGES, TOOLS);
    expect(server.chats[0]!.body.stream).toBe(true);
    expect(r.message.tool_calls).toHaveLength(2);
  });

  test('a streamed Write cut off at max_tokens: length, no call, no parse error', async () => {
    server.script(router(VLLM_ROUTES, [vllm('stream-truncated-tool-call')]));
    const r = await backend().generate(MESSAGES, TOOLS, { maxNewTokens: 64 });
    expect(r.finishReason).toBe('length');
    expect(r.message.tool_calls).toBeUndefined();
    expect(r.parseErrors).toEqual([]);
    expect(r.message.reasoning).toBe('Rewrite the reader.');
  });

  test('raw qwen3_coder markup streamed as content is parsed here', async () => {
    server.script(router(VLLM_ROUTES, [vllm('stream-raw-markup')]));
    const r = await backend().generate(MESSAGES, TOOLS);
    expect(r.message).toMatchObject({
      content: '',
      reasoning: 'List files.',
      tool_calls: [{ name: 'Bash', arguments: { command: 'ls -la' } }],
    });
    expect(r.finishReason).toBe('tool_calls');
  });

  test('an engine error mid-stream is a ModelError quoting the server', async () => {
    server.script(router(NO_DISCOVERY, [vllm('stream-error')]));
    const err = await rejection(backend().generate(MESSAGES, TOOLS));
    expect(err.message).toBe(
      `${server.url} reported an error mid-stream: EngineCore encountered an issue. See stack trace (above) for the root cause.`,
    );
  });

  test.each([
    ['overflow-max-model-len', 4096, undefined],
    ['overflow-too-large', 8192, 2100],
    ['overflow-legacy', 4096, 100],
    ['overflow-decoder-prompt', 65536, 70001],
  ])('%s is a ContextOverflowError with the numbers the server gave', async (name, contextLength, promptTokens) => {
    server.script(router(NO_DISCOVERY, [vllm(name)]));
    const err = await rejection(backend().generate(MESSAGES, TOOLS));
    expect(err).toBeInstanceOf(ContextOverflowError);
    expect(err).toMatchObject({ contextLength, promptTokens, retryable: false });
    expect(err.message).not.toMatch(/\.\.$/);
    expect(server.chats).toHaveLength(1);
  });

  test('"max_tokens cannot be greater than max_model_len" teaches the length: one clamped retry succeeds', async () => {
    const tokenize: HttpFixture = {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"count":2100,"tokens":[]}',
    };
    server.script(router({ '/tokenize': tokenize }, [vllm('overflow-max-model-len'), vllm('final-answer')]));
    const b = backend({ stream: false });
    const r = await b.generate(MESSAGES, TOOLS, { maxNewTokens: 8192 });
    expect(r.message.content).toBe('The CRLF handling is fixed and the tests pass.');
    expect(server.chats.map((c) => c.body.max_tokens)).toEqual([8192, 4096 - 2100]);
    expect(b.info().contextLength).toBe(4096);
  });

  test('a prompt that fills the context fails before sending, with its size', async () => {
    const tokenize: HttpFixture = {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"count":9000,"max_model_len":8192,"tokens":[]}',
    };
    server.script(router({ '/v1/models': vllm('models'), '/tokenize': tokenize }, [vllm('final-answer')]));
    const err = await rejection(backend().generate(MESSAGES, TOOLS, { maxNewTokens: 1024 }));
    expect(err).toBeInstanceOf(ContextOverflowError);
    expect(err).toMatchObject({ promptTokens: 9000, contextLength: 8192 });
    expect(err.message).toBe("the prompt (9000 tokens) fills the model's 8192-token context");
    expect(server.chats).toHaveLength(0);
  });

  test('without --enable-auto-tool-choice: one warning, then tool_choice "none" and the raw markup parsed here', async () => {
    server.script(router(NO_DISCOVERY, [vllm('auto-tool-choice-rejected'), vllm('stream-raw-markup')]));
    const warnings: string[] = [];
    const retries: RetryInfo[] = [];
    const b = backend({ onWarning: (w) => warnings.push(w), onRetry: (r) => retries.push(r) });
    const r = await b.generate(MESSAGES, TOOLS);
    expect(r.message.tool_calls).toEqual([{ id: expect.any(String), name: 'Bash', arguments: { command: 'ls -la' } }]);
    expect(server.chats.map((c) => c.body.tool_choice)).toEqual(['auto', 'none']);
    expect(warnings).toEqual([
      `${server.url} refuses tool_choice "auto": parsing the model's raw tool-call markup instead (start vLLM with --enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3).`,
    ]);
    expect(retries).toEqual([]);
    await b.generate(MESSAGES, TOOLS);
    expect(server.chats.map((c) => c.body.tool_choice)).toEqual(['auto', 'none', 'none']);
  });

  test('a validation error surfaced as a 500 is not retried', async () => {
    server.script(router(NO_DISCOVERY, [vllm('validation-500')]));
    const err = await rejection(backend().generate(MESSAGES, TOOLS));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(
      /answered 500 Internal Server Error: 1 validation error for ValidatorIterator .*\(a rejection of the request: not retried\)$/,
    );
    expect(server.chats).toHaveLength(1);
  });

  test('an engine that died answers the same 500 twice: two attempts, not five', async () => {
    server.script(router(NO_DISCOVERY, [vllm('engine-dead-500')]));
    const err = await rejection(backend().generate(MESSAGES, TOOLS));
    expect(err.message).toMatch(/\(the same error twice: not retried further\)$/);
    expect(server.chats).toHaveLength(2);
  });

  test('503 with Retry-After while the engine restarts, then the answer', async () => {
    server.script(router(NO_DISCOVERY, [vllm('unavailable-503'), vllm('stream-tool-calls')]));
    const retries: RetryInfo[] = [];
    const r = await backend({ onRetry: (i) => retries.push(i) }).generate(MESSAGES, TOOLS);
    expect(r.message.tool_calls).toHaveLength(2);
    expect(retries).toEqual([
      {
        retry: 1,
        maxRetries: 12,
        delayMs: 1000,
        elapsedMs: expect.any(Number),
        reason: `${server.url} answered 503 Service Unavailable: Service Unavailable.`,
      },
    ]);
  });

  test('a server restart (connection refused, then back on the same port) is waited out with visible retries', async () => {
    const restarting = new ScriptedServer();
    await restarting.start();
    const port = Number(new URL(restarting.url).port);
    await restarting.stop();
    const retries: RetryInfo[] = [];
    const b = new OpenAIBackend({
      baseUrl: restarting.url,
      model: 'frognano-4b',
      retry: { baseDelayMs: 100, maxDelayMs: 400 },
      random: () => 0.5,
      onRetry: (i) => retries.push(i),
    });
    const back = new ScriptedServer();
    setTimeout(() => {
      back.script(router(VLLM_ROUTES, [vllm('stream-tool-calls')]));
      void back.start(port);
    }, 600);
    try {
      const r = await b.generate(MESSAGES, TOOLS);
      expect(r.message.tool_calls).toHaveLength(2);
      expect(retries.length).toBeGreaterThanOrEqual(2);
      expect(retries[0]!.reason).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:\d+\/v1: ECONNREFUSED/);
      expect(retries.map((r) => r.delayMs).slice(0, 3)).toEqual([75, 150, 300]);
    } finally {
      await back.stop();
    }
  });

  test('retries stop at the policy window even with retries left', async () => {
    server.script(router(NO_DISCOVERY, [vllm('unavailable-503')]));
    const err = await rejection(
      backend({ maxRetries: 50, retry: { maxRetryWindowMs: 2500 } }).generate(MESSAGES, TOOLS),
    );
    expect(err.message).toMatch(/gave up after 4 attempts in 3\.\d s\)$/); // Retry-After 1 s: attempts at 0, 1, 2, 3 s
  });

  test('a stream that goes silent is cut after the stall timeout and retried', async () => {
    server.script(
      router(VLLM_ROUTES, [
        (_req, res) => replay(res, vllm('stream-tool-calls'), { stallAfterEvents: 4 }),
        vllm('stream-tool-calls'),
      ]),
    );
    const retries: RetryInfo[] = [];
    const started = Date.now();
    const r = await backend({ stallTimeoutMs: 300, onRetry: (i) => retries.push(i) }).generate(MESSAGES, TOOLS);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(r.message.tool_calls).toHaveLength(2);
    expect(retries.map((i) => i.reason)).toEqual([`${server.url} sent nothing for 0.3 s (stalled stream).`]);
  });

  test('a stall after tokens were shown is reported, not retried (no repeated output)', async () => {
    server.script(
      router(NO_DISCOVERY, [(_req, res) => replay(res, vllm('stream-tool-calls'), { stallAfterEvents: 4 })]),
    );
    const deltas: string[] = [];
    const err = await rejection(
      backend({ stallTimeoutMs: 300 }).generate(MESSAGES, TOOLS, { onToken: (d) => deltas.push(d) }),
    );
    expect(err.message).toBe(
      `${server.url} sent nothing for 0.3 s (stalled stream). (after part of the answer was streamed)`,
    );
    expect(deltas.join('')).toBe('The test reads');
    expect(server.chats).toHaveLength(1);
  });

  test('a server that never sends headers is a stall too', async () => {
    server.script(router(NO_DISCOVERY, [() => undefined]));
    const err = await rejection(backend({ stallTimeoutMs: 200, maxRetries: 1 }).generate(MESSAGES, TOOLS));
    expect(err.message).toMatch(/sent nothing for 0\.2 s \(stalled stream\)\. \(gave up after 2 attempts/);
  });

  test('a failed token count is not latched: the next count asks the server again', async () => {
    let calls = 0;
    server.script(async (req, res) => {
      if (req.path === '/tokenize') {
        calls++;
        if (calls === 1) return replay(res, vllm('engine-dead-500'));
        return replay(res, vllm('tokenize'));
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"detail":"Not Found"}');
    });
    const b = backend();
    expect(await b.countTokens(MESSAGES, TOOLS)).toBeGreaterThan(0); // an estimate this once
    expect(await b.countTokens(MESSAGES, TOOLS)).toBe(2100);
  });

  test('ping learns max_model_len from /v1/models', async () => {
    server.script(router(VLLM_ROUTES, []));
    const b = backend();
    expect(await b.ping()).toEqual({
      ok: true,
      models: ['frognano-4b'],
      message: `${server.url} serves "frognano-4b", context 8192 tokens.`,
    });
    expect(b.info().contextLength).toBe(8192);
  });

  test('doctor probe: tool_choice "auto" accepted and "required" answered with a parsed call', async () => {
    server.script(router(NO_DISCOVERY, [vllm('final-answer'), vllm('required-tool-call')]));
    expect(await backend().probeToolCalls()).toEqual({
      ok: true,
      message: 'answers with parsed tool calls (report_status, finish_reason stop).',
    });
    expect(server.chats.map((c) => [c.body.tool_choice, c.body.max_tokens])).toEqual([
      ['auto', 1],
      ['required', 256],
    ]);
  });

  test('doctor probe: a server without --enable-auto-tool-choice is told the exact flags', async () => {
    server.script(router(NO_DISCOVERY, [vllm('auto-tool-choice-rejected')]));
    const probe = await backend().probeToolCalls();
    expect(probe).toEqual({
      ok: false,
      message: `${server.url} refuses tool_choice "auto": start vLLM with --enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3 (the runner falls back to parsing raw markup, slower and less reliable).`,
    });
  });

  test('doctor probe: an answer without tool_calls fails', async () => {
    server.script(router(NO_DISCOVERY, [vllm('final-answer')]));
    expect((await backend().probeToolCalls()).ok).toBe(false);
  });
});

/** llama-server with `-c 4096 --parallel 2 --kv-unified --alias frognano-4b` (recorded). */
const LLAMA_ROUTES = { '/v1/models': llamacpp('models') };

/** llama.cpp's /tokenize: vLLM's body gets 200 and no tokens; its own `content` body gets the tokens. */
function llamaTokenizer(
  req: { path: string; body: any },
  res: import('node:http').ServerResponse,
): Promise<void> | undefined {
  if (req.path === '/apply-template') return replay(res, llamacpp('apply-template'));
  if (req.path === '/tokenize')
    return replay(res, llamacpp(typeof req.body?.content === 'string' ? 'tokenize' : 'tokenize-vllm-style'));
  return undefined;
}

describe('llama.cpp llama-server --jinja (recorded)', () => {
  test('context length from /v1/models meta.n_ctx; the --alias is the served name', async () => {
    server.script(router(LLAMA_ROUTES, []));
    const b = backend();
    expect(await b.ping()).toEqual({
      ok: true,
      models: ['frognano-4b'],
      message: `${server.url} serves "frognano-4b", context 4096 tokens.`,
    });
    expect(b.info().contextLength).toBe(4096);
  });

  test('without --alias the model name does not match, and the message says to add it', async () => {
    server.script(router(LLAMA_ROUTES, []));
    const ping = await backend({ model: 'frognano-4b-q8' }).ping();
    expect(ping.message).toBe(
      `${server.url} is up but does not serve "frognano-4b-q8" (it serves: frognano-4b); start llama-server with --alias frognano-4b-q8, or set FROGNANO_OPENAI_MODEL.`,
    );
  });

  test('an older llama-server without meta.n_ctx: the context comes from /props', async () => {
    const bare: HttpFixture = {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"object":"list","data":[{"id":"frognano-4b","object":"model","owned_by":"llamacpp"}]}',
    };
    server.script(router({ '/v1/models': bare, '/props': llamacpp('props') }, [llamacpp('final-answer')]));
    const b = backend();
    await b.generate(MESSAGES, []);
    expect(b.info().contextLength).toBe(4096);
  });

  test("token counting: vLLM's /tokenize body is answered with no tokens, so /apply-template + /tokenize is used", async () => {
    server.script((req, res) => llamaTokenizer(req, res) ?? replay(res, { status: 404, headers: {}, body: '' }));
    const b = backend();
    expect(await b.countTokens(MESSAGES, TOOLS)).toBe(20); // the recorded /tokenize answer's token list
    expect(server.requests.map((r) => r.path)).toEqual(['/tokenize', '/apply-template', '/tokenize']);
  });

  test('parallel tool calls parsed by the server (non-streamed), cached prompt tokens', async () => {
    server.script(router(LLAMA_ROUTES, [llamacpp('tool-calls')]));
    const r = await backend({ stream: false }).generate(MESSAGES, TOOLS);
    expect(r.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^\w{32}$/),
        name: 'report_status',
        arguments: { ready: false, attempts: 4 },
        argumentsText: expect.any(String),
      },
      {
        id: expect.stringMatching(/^\w{32}$/),
        name: 'seek',
        arguments: { offset: 4 },
        argumentsText: expect.any(String),
      },
    ]);
    expect(r).toMatchObject({
      finishReason: 'tool_calls',
      promptTokens: 1286,
      prefillTokens: 1286 - 143,
      completionTokens: 193,
    });
    expect(r.rawText).toContain(
      '<tool_call>\n<function=seek>\n<parameter=offset>\n4\n</parameter>\n</function>\n</tool_call>',
    );
  });

  test('streamed tool-call deltas (id and name first, then argument fragments) and usage', async () => {
    server.script(router(LLAMA_ROUTES, [llamacpp('stream-tool-calls')]));
    const r = await backend().generate(MESSAGES, TOOLS);
    expect(r.message.tool_calls?.map((c) => [c.name, c.arguments])).toEqual([
      ['report_status', { ready: false, attempts: 4 }],
      ['seek', { offset: 4 }],
    ]);
    expect(r.finishReason).toBe('tool_calls');
    expect(r.completionTokens).toBeGreaterThan(0);
  });

  test('a call cut at max_tokens comes back as a partial tool_calls entry with finish "length": not run, no parse error', async () => {
    server.script(router(LLAMA_ROUTES, [llamacpp('auto-cut-tool-call')]));
    const r = await backend({ stream: false }).generate(MESSAGES, TOOLS, { maxNewTokens: 64 });
    expect(r.finishReason).toBe('length');
    expect(r.message.tool_calls).toBeUndefined();
    expect(r.parseErrors).toEqual([]);
    expect(r.rawText).toContain('{"ready":false');
  });

  test('a call cut before the server could parse it stays raw markup in the content: not run', async () => {
    server.script(router(LLAMA_ROUTES, [llamacpp('truncated-tool-call')]));
    const r = await backend({ stream: false }).generate(MESSAGES, TOOLS, { maxNewTokens: 12 });
    expect(r).toMatchObject({ finishReason: 'length', parseErrors: [], rawText: '<tool_call>\n<function=r' });
    expect(r.message.tool_calls).toBeUndefined();

    server.script(router(LLAMA_ROUTES, [llamacpp('stream-truncated-tool-call')]));
    const streamed = await backend().generate(MESSAGES, TOOLS, { maxNewTokens: 12 });
    expect(streamed).toMatchObject({ finishReason: 'length', parseErrors: [], completionTokens: 12 });
    expect(streamed.message.tool_calls).toBeUndefined();
  });

  test('reasoning_content, non-streamed and streamed', async () => {
    server.script(router(LLAMA_ROUTES, [llamacpp('thinking')]));
    const r = await backend({ stream: false }).generate(MESSAGES, TOOLS);
    expect(r.message.reasoning).toMatch(/^K[K\n]*K$/);
    expect(r.message.content).toBe('');

    server.script(router(LLAMA_ROUTES, [llamacpp('stream-thinking')]));
    const deltas: string[] = [];
    const s = await backend().generate(MESSAGES, TOOLS, { onToken: (d) => deltas.push(d) });
    expect(s.message.reasoning).toMatch(/^K[K\n]*K$/);
    expect(deltas.join('').trim()).toBe(s.message.reasoning);
    expect(s.finishReason).toBe('length');
  });

  test('exceed_context_size_error (also for a stream request) is a ContextOverflowError with n_prompt_tokens and n_ctx', async () => {
    for (const name of ['overflow', 'stream-overflow']) {
      server.script(router(NO_DISCOVERY, [llamacpp(name)]));
      const err = await rejection(backend().generate(MESSAGES, TOOLS));
      expect(err).toBeInstanceOf(ContextOverflowError);
      expect(err).toMatchObject({ promptTokens: 25019, contextLength: 4096 });
      expect(err.message).toBe(
        `${server.url} answered 400 Bad Request: request (25019 tokens) exceeds the available context size (4096 tokens), try increasing it.`,
      );
    }
  });

  test("a 400 invalid_request_error fails at once with the server's words", async () => {
    server.script(router(NO_DISCOVERY, [llamacpp('bad-request')]));
    const err = await rejection(backend().generate(MESSAGES, TOOLS));
    expect(err).toMatchObject({
      retryable: false,
      message: `${server.url} answered 400 Bad Request: Expected 'messages' to be an array.`,
    });
    expect(server.chats).toHaveLength(1);
  });

  test('503 "Loading model" while the server starts is retried', async () => {
    server.script(
      router(NO_DISCOVERY, [llamacpp('loading-503'), llamacpp('loading-503'), llamacpp('stream-tool-calls')]),
    );
    const retries: RetryInfo[] = [];
    const r = await backend({ onRetry: (i) => retries.push(i) }).generate(MESSAGES, TOOLS);
    expect(r.message.tool_calls).toHaveLength(2);
    expect(retries.map((i) => i.reason)).toEqual([
      `${server.url} answered 503 Service Unavailable: Loading model.`,
      `${server.url} answered 503 Service Unavailable: Loading model.`,
    ]);
  });

  test('doctor probe against llama-server: auto accepted, required answered with a parsed call', async () => {
    server.script(router(NO_DISCOVERY, [llamacpp('auto-probe'), llamacpp('required-tool-call')]));
    expect(await backend().probeToolCalls()).toEqual({
      ok: true,
      message: 'answers with parsed tool calls (report_status, finish_reason tool_calls).',
    });
  });
});
