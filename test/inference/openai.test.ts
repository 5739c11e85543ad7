/**
 * OpenAIBackend against a real HTTP server on 127.0.0.1 that answers the way vLLM does
 * (tool_calls or raw markup, usage with cached tokens, 429 + Retry-After, 5xx, SSE streams).
 */
import type { ServerResponse } from 'node:http';
import {
  OpenAIBackend,
  overestimatePromptTokens,
  type OpenAIBackendOptions,
} from '../../src/inference/openai/index.js';
import type { RetryInfo } from '../../src/inference/retry.js';
import { ScriptedServer, rejection, testBackend } from './modelServerReplay.js';
import { ContextOverflowError, type ChatMessage, type ToolSpec } from '../../src/inference/types.js';

const esc = (s: string) => s.replace(/[/.?*+()[\]{}|^$\\]/g, '\\$&');

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function completion(
  message: Record<string, unknown>,
  finish = 'stop',
  usage: Record<string, unknown> | null = { prompt_tokens: 1200, completion_tokens: 40 },
) {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'frognano-4b',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
    ...(usage ? { usage } : {}),
  };
}

/** Writes SSE events with a short pause between them, like a server generating tokens. */
async function sse(
  res: ServerResponse,
  events: unknown[],
  opts: { done?: boolean; pauseMs?: number } = {},
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(': keep-alive\n\n');
  for (const e of events) {
    if (res.destroyed) return; // the client went away
    res.write(`data: ${JSON.stringify(e)}\n\n`);
    await new Promise((r) => setTimeout(r, opts.pauseMs ?? 2));
  }
  if (opts.done !== false) res.write('data: [DONE]\n\n');
  res.end();
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

const TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'Read',
      description: 'Read a file',
      parameters: {
        type: 'object',
        properties: { file_path: { type: 'string' }, offset: { type: 'integer' } },
        required: ['file_path'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Bash',
      description: 'Run a command',
      parameters: {
        type: 'object',
        properties: { command: { type: 'string' }, timeout: { type: 'number' } },
        required: ['command'],
      },
    },
  },
];

const HISTORY: ChatMessage[] = [
  { role: 'system', content: 'You are a software engineering agent.' },
  { role: 'user', content: 'Fix the failing test.' },
  {
    role: 'assistant',
    content: 'Reading the test.',
    reasoning: 'Start with the test file.',
    tool_calls: [{ id: 'call_a_0', name: 'Read', arguments: { file_path: 'test/a.test.ts', offset: 1 } }],
  },
  { role: 'tool', tool_call_id: 'call_a_0', name: 'Read', content: 'test/a.test.ts\n1. expect(1).toBe(2)' },
];

const server = new ScriptedServer({ answerDiscovery: false });
beforeAll(() => server.start());
afterAll(() => server.stop());

const backend = (extra: Partial<OpenAIBackendOptions> = {}) => testBackend(server, { stream: false, ...extra });

describe('OpenAIBackend.generate (non-streaming)', () => {
  test('sends the conversation in wire format and maps server-parsed tool calls back', async () => {
    server.script((_req, res) =>
      json(
        res,
        200,
        completion(
          {
            content: 'Running the tests.',
            reasoning_content: 'The assertion is wrong.',
            tool_calls: [
              {
                id: 'chatcmpl-tool-9',
                type: 'function',
                function: { name: 'Bash', arguments: '{"command": "npm test", "timeout": 60}' },
              },
            ],
          },
          'tool_calls',
          { prompt_tokens: 1500, completion_tokens: 55, prompt_tokens_details: { cached_tokens: 1024 } },
        ),
      ),
    );
    const b = backend({
      apiKey: 'sk-test-secret-123456',
      extraBody: { chat_template_kwargs: { enable_thinking: true } },
    });
    const result = await b.generate(HISTORY, TOOLS, {
      maxNewTokens: 8192,
      temperature: 0.6,
      topP: 0.95,
      topK: 20,
      seed: 7,
      stop: ['<|im_end|>'],
    });

    const req = server.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer sk-test-secret-123456');
    expect(req.body).toEqual({
      chat_template_kwargs: { enable_thinking: true },
      model: 'frognano-4b',
      messages: [
        { role: 'system', content: 'You are a software engineering agent.' },
        { role: 'user', content: 'Fix the failing test.' },
        {
          role: 'assistant',
          content: 'Reading the test.',
          reasoning_content: 'Start with the test file.',
          tool_calls: [
            {
              id: 'call_a_0',
              type: 'function',
              function: { name: 'Read', arguments: '{"file_path":"test/a.test.ts","offset":1}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a_0', name: 'Read', content: 'test/a.test.ts\n1. expect(1).toBe(2)' },
      ],
      tools: TOOLS,
      tool_choice: 'auto',
      parallel_tool_calls: true,
      max_tokens: 8192,
      temperature: 0.6,
      top_p: 0.95,
      top_k: 20,
      min_p: 0,
      repetition_penalty: 1,
      seed: 7,
      stop: ['<|im_end|>'],
    });

    expect(result.message).toEqual({
      role: 'assistant',
      content: 'Running the tests.',
      reasoning: 'The assertion is wrong.',
      tool_calls: [
        {
          id: 'chatcmpl-tool-9',
          name: 'Bash',
          arguments: { command: 'npm test', timeout: 60 },
          argumentsText: '{"command": "npm test", "timeout": 60}',
        },
      ],
    });
    expect(result.finishReason).toBe('tool_calls');
    expect(result).toMatchObject({ promptTokens: 1500, prefillTokens: 476, completionTokens: 55, parseErrors: [] });
    expect(result.elapsedMs).toBeGreaterThan(0);
  });

  test("no tools: no tools/tool_choice fields; upstream Leaf's eval sampling when the caller sets none", async () => {
    server.script((_req, res) => json(res, 200, completion({ content: 'Done.' })));
    const result = await backend().generate([{ role: 'user', content: 'hi' }], []);
    expect(server.requests[0]!.body).toEqual({
      model: 'frognano-4b',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0.6,
      top_p: 0.95,
      top_k: 20,
      min_p: 0,
      repetition_penalty: 1,
      chat_template_kwargs: { enable_thinking: true },
    });
    expect(server.requests[0]!.headers.authorization).toBeUndefined();
    expect(result.message).toEqual({ role: 'assistant', content: 'Done.' });
    expect(result.finishReason).toBe('stop');
  });

  test('raw <tool_call> markup from a server without a tool parser is parsed (with schema types)', async () => {
    const raw =
      '<think>\nCheck the file first.\n</think>\n\nLet me look.\n<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/a.ts\n' +
      '</parameter>\n<parameter=offset>\n10\n</parameter>\n</function>\n</tool_call>';
    server.script((_req, res) => json(res, 200, completion({ content: raw })));
    const result = await backend().generate(HISTORY, TOOLS);
    expect(result.message.content).toBe('Let me look.');
    expect(result.message.reasoning).toBe('Check the file first.');
    expect(result.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_[0-9a-f]{8}_0$/),
        name: 'Read',
        arguments: { file_path: 'src/a.ts', offset: 10 },
      },
    ]);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.rawText).toBe(raw);
  });

  test('malformed markup and bad JSON arguments become parseErrors; good calls are kept', async () => {
    server.script(
      (_req, res) => json(res, 200, completion({ content: '<tool_call>\nrun ls please\n</tool_call>' })),
      (_req, res) =>
        json(
          res,
          200,
          completion(
            {
              content: null,
              tool_calls: [
                { id: 'c1', type: 'function', function: { name: 'Bash', arguments: '{"command": "ls"' } },
                { id: 'c2', type: 'function', function: { name: 'Read', arguments: '{"file_path": "a"}' } },
              ],
            },
            'tool_calls',
          ),
        ),
    );
    const first = await backend().generate(HISTORY, TOOLS);
    expect(first.message.tool_calls).toBeUndefined();
    expect(first.parseErrors).toEqual([
      expect.stringMatching(/^Malformed tool call #1: missing <function=\.\.\.> after <tool_call>/),
    ]);
    expect(first.finishReason).toBe('stop');

    // Server-parsed calls whose arguments are not a JSON object run as {} (upstream Leaf's rule): the tool answers
    // with its own error, and the text the server sent is kept for the trajectory.
    const second = await backend().generate(HISTORY, TOOLS);
    expect(second.message.tool_calls).toEqual([
      { id: 'c1', name: 'Bash', arguments: {}, argumentsText: '{"command": "ls"' },
      { id: 'c2', name: 'Read', arguments: { file_path: 'a' }, argumentsText: '{"file_path": "a"}' },
    ]);
    expect(second.parseErrors).toEqual([]);
    expect(second.finishReason).toBe('tool_calls');
  });

  test('finish_reason length is reported; missing usage falls back to an estimate', async () => {
    server.script((_req, res) => json(res, 200, completion({ content: 'x'.repeat(300) }, 'length', null)));
    const result = await backend().generate(HISTORY, TOOLS);
    expect(result.finishReason).toBe('length');
    expect(result.promptTokens).toBe(overestimatePromptTokens(HISTORY, TOOLS));
    expect(result.prefillTokens).toBe(result.promptTokens);
    expect(result.completionTokens).toBe(100);
  });

  test('a 200 that is not a chat completion is a clear, non-retryable error', async () => {
    server.script((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>proxy login</html>');
    });
    const err = await rejection(backend().generate(HISTORY, TOOLS));
    expect(err.message).toBe(
      `${server.url} returned a response that is not a chat completion: <html>proxy login</html>`,
    );
    expect(err.retryable).toBe(false);
    expect(server.requests).toHaveLength(1);
  });
});

describe('OpenAIBackend retries, timeouts and errors', () => {
  test('429 with Retry-After is honoured, then the answer is used', async () => {
    server.script(
      (_req, res) => json(res, 429, { error: { message: 'Too many requests' } }, { 'retry-after': '1' }),
      (_req, res) => json(res, 200, completion({ content: 'ok' })),
    );
    const retries: RetryInfo[] = [];
    const started = Date.now();
    const result = await backend({ onRetry: (r) => retries.push(r) }).generate(HISTORY, TOOLS);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(result.message.content).toBe('ok');
    expect(retries).toEqual([
      {
        retry: 1,
        maxRetries: 12,
        delayMs: 1000,
        elapsedMs: expect.any(Number),
        reason: `${server.url} answered 429 Too Many Requests: Too many requests.`,
      },
    ]);
    expect(server.requests).toHaveLength(2);
  });

  test('5xx is retried with exponential backoff and jitter', async () => {
    server.script(
      (_req, res) => json(res, 503, { error: { message: 'engine loading' } }),
      (_req, res) => json(res, 502, {}),
      (_req, res) => json(res, 200, completion({ content: 'ok' })),
    );
    const delays: number[] = [];
    const result = await backend({ onRetry: (r) => delays.push(r.delayMs) }).generate(HISTORY, TOOLS);
    expect(result.message.content).toBe('ok');
    // random() = 0.5: half the step plus a quarter of it; steps 10 then 20 ms.
    expect(delays).toEqual([8, 15]);
  });

  test('persistent 503 gives up after maxRetries with the server message', async () => {
    server.script((_req, res) => json(res, 503, { object: 'error', message: 'CUDA out of memory' }));
    const err = await rejection(backend({ maxRetries: 2 }).generate(HISTORY, TOOLS));
    expect(err.message).toMatch(
      new RegExp(
        `^${esc(server.url)} answered 503 Service Unavailable: CUDA out of memory\\. \\(gave up after 3 attempts in \\d\\.\\d s\\)$`,
      ),
    );
    expect(err.retryable).toBe(true);
    expect(server.requests).toHaveLength(3);
  });

  test('the same 500 twice is a deterministic answer: no third attempt', async () => {
    server.script((_req, res) => json(res, 500, { object: 'error', message: 'CUDA out of memory' }));
    const err = await rejection(backend({ maxRetries: 5 }).generate(HISTORY, TOOLS));
    expect(err.message).toBe(
      `${server.url} answered 500 Internal Server Error: CUDA out of memory. (the same error twice: not retried further)`,
    );
    expect(err.retryable).toBe(false);
    expect(server.requests).toHaveLength(2);
  });

  test('4xx is not retried; the message carries the server reason, a hint, and never the key', async () => {
    const key = 'sk-live-abcdefghijklmnop';
    server.script((req, res) =>
      json(res, 401, { error: { message: `invalid key ${String(req.headers.authorization)}` } }),
    );
    const err = await rejection(backend({ apiKey: key }).generate(HISTORY, TOOLS));
    expect(server.requests).toHaveLength(1);
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/answered 401 Unauthorized: invalid key .*Check FROGNANO_OPENAI_API_KEY\.$/);
    expect(err.message).not.toContain(key);

    server.script((_req, res) => json(res, 400, { error: { message: 'Unknown field: frobnicate' } }));
    const bad = await rejection(backend().generate(HISTORY, TOOLS));
    expect(bad.message).toBe(`${server.url} answered 400 Bad Request: Unknown field: frobnicate.`);
    expect(server.requests).toHaveLength(1);

    // A server message that ends in a period is not given a second one.
    server.script((_req, res) =>
      json(res, 400, { error: { message: "This model's maximum context length is 131072 tokens." } }),
    );
    const tooLong = await rejection(backend().generate(HISTORY, TOOLS));
    expect(tooLong).toBeInstanceOf(ContextOverflowError);
    expect(tooLong.message).toBe(
      `${server.url} answered 400 Bad Request: This model's maximum context length is 131072 tokens.`,
    );
    expect(server.requests).toHaveLength(1);
  });

  test('a slow server hits the timeout, which is not retried', async () => {
    server.script((_req, res) => {
      const t = setTimeout(() => json(res, 200, completion({ content: 'late' })), 3000);
      res.on('close', () => clearTimeout(t));
    });
    const started = Date.now();
    const err = await rejection(backend({ timeoutMs: 300 }).generate(HISTORY, TOOLS));
    expect(Date.now() - started).toBeLessThan(2500);
    expect(err.message).toBe(`${server.url} did not finish answering within 0.3 s.`);
    expect(err.retryable).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  test('connection refused is retried, then reported with the socket error', async () => {
    const closed = new ScriptedServer({ answerDiscovery: false });
    await closed.start();
    const url = closed.url;
    await closed.stop();
    const reasons: string[] = [];
    const b = new OpenAIBackend({
      baseUrl: url,
      model: 'm',
      maxRetries: 1,
      retry: { baseDelayMs: 5 },
      onRetry: (r) => reasons.push(r.reason),
    });
    const err = await rejection(b.generate(HISTORY, TOOLS));
    expect(err.message).toMatch(
      new RegExp(`^cannot reach ${esc(url)}: ECONNREFUSED.*\\. \\(gave up after 2 attempts in .* s\\)$`),
    );
    expect(reasons).toHaveLength(1);
  });

  test('the caller aborting mid-request gives finishReason "aborted"', async () => {
    server.script((_req, res) => {
      const t = setTimeout(() => json(res, 200, completion({ content: 'late' })), 3000);
      res.on('close', () => clearTimeout(t));
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const result = await backend().generate(HISTORY, TOOLS, { signal: controller.signal });
    expect(result.finishReason).toBe('aborted');
    expect(result.message).toEqual({ role: 'assistant', content: '' });
  });

  test('aborting during a retry wait stops at once', async () => {
    server.script((_req, res) => json(res, 503, {}, { 'retry-after': '30' }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const result = await backend().generate(HISTORY, TOOLS, { signal: controller.signal });
    expect(result.finishReason).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test('a Retry-After longer than the policy allows fails now instead of stalling the job', async () => {
    server.script((_req, res) => json(res, 429, { error: { message: 'quota' } }, { 'retry-after': '3600' }));
    const err = await rejection(backend().generate(HISTORY, TOOLS));
    expect(err.message).toMatch(/answered 429 Too Many Requests: quota\. \(the server asks to wait 3600 s\)$/);
    expect(server.requests).toHaveLength(1);
  });
});

describe('OpenAIBackend streaming (SSE)', () => {
  test('streams reasoning and content to onToken and assembles tool-call deltas', async () => {
    server.script((_req, res) =>
      sse(res, [
        chunk({ role: 'assistant', content: '' }),
        chunk({ reasoning_content: 'Need to ' }),
        chunk({ reasoning_content: 'run tests.' }),
        chunk({ content: 'Running ' }),
        chunk({ content: 'them.' }),
        chunk({
          tool_calls: [{ index: 0, id: 'call_s1', type: 'function', function: { name: 'Bash', arguments: '' } }],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"command": ' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"npm test"}' } }] }),
        chunk({
          tool_calls: [
            { index: 1, id: 'call_s2', type: 'function', function: { name: 'Read', arguments: '{"file_path": "a"}' } },
          ],
        }),
        chunk({}, 'tool_calls'),
        {
          object: 'chat.completion.chunk',
          choices: [],
          usage: { prompt_tokens: 900, completion_tokens: 30, prompt_tokens_details: { cached_tokens: 800 } },
        },
      ]),
    );
    const deltas: string[] = [];
    const result = await backend().generate(HISTORY, TOOLS, { onToken: (d) => deltas.push(d) });
    expect(server.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(server.requests[0]!.headers.accept).toBe('text/event-stream');
    expect(deltas).toEqual(['Need to ', 'run tests.', 'Running ', 'them.']);
    expect(result.message).toEqual({
      role: 'assistant',
      content: 'Running them.',
      reasoning: 'Need to run tests.',
      tool_calls: [
        { id: 'call_s1', name: 'Bash', arguments: { command: 'npm test' }, argumentsText: expect.any(String) },
        { id: 'call_s2', name: 'Read', arguments: { file_path: 'a' }, argumentsText: expect.any(String) },
      ],
    });
    expect(result).toMatchObject({
      finishReason: 'tool_calls',
      promptTokens: 900,
      prefillTokens: 100,
      completionTokens: 30,
    });
  });

  test('streamed raw XML (no server tool parser) is parsed after the stream ends', async () => {
    const text =
      '<tool_call>\n<function=Bash>\n<parameter=command>\necho "a < b"\n</parameter>\n</function>\n</tool_call>';
    const pieces = text.match(/[\s\S]{1,7}/g)!;
    server.script((_req, res) =>
      sse(res, [...pieces.map((p) => chunk({ content: p })), chunk({}, 'stop')], { pauseMs: 0 }),
    );
    const deltas: string[] = [];
    const result = await backend().generate(HISTORY, TOOLS, { onToken: (d) => deltas.push(d) });
    expect(deltas.join('')).toBe(text);
    expect(result.message.tool_calls).toEqual([
      { id: expect.any(String), name: 'Bash', arguments: { command: 'echo "a < b"' } },
    ]);
    expect(result.finishReason).toBe('tool_calls');
  });

  test('an error event mid-stream is a ModelError with the server message', async () => {
    server.script((_req, res) =>
      sse(res, [chunk({ content: 'Hel' }), { error: { message: 'engine died', code: 500 } }], { done: false }),
    );
    const err = await rejection(backend().generate(HISTORY, TOOLS, { onToken: () => {} }));
    expect(err.message).toBe(`${server.url} reported an error mid-stream: engine died`);
    expect(server.requests).toHaveLength(1);
  });

  test('a stream cut after output was delivered is not retried (no duplicate tokens)', async () => {
    server.script(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify(chunk({ content: 'partial ' }))}\n\n`);
      await new Promise((r) => setTimeout(r, 20));
      res.destroy();
    });
    const deltas: string[] = [];
    const err = await rejection(backend().generate(HISTORY, TOOLS, { onToken: (d) => deltas.push(d) }));
    expect(err.message).toMatch(/stream from .* (broke|ended early)/);
    expect(err.retryable).toBe(true);
    expect(deltas).toEqual(['partial ']);
    expect(server.requests).toHaveLength(1);
  });

  test('a 503 before the stream starts is retried', async () => {
    server.script(
      (_req, res) => json(res, 503, { error: { message: 'busy' } }),
      (_req, res) => sse(res, [chunk({ content: 'ok' }), chunk({}, 'stop')]),
    );
    const result = await backend().generate(HISTORY, TOOLS, { onToken: () => {} });
    expect(result.message.content).toBe('ok');
    expect(server.requests).toHaveLength(2);
  });

  test('aborting mid-stream returns what was generated so far', async () => {
    server.script((_req, res) =>
      sse(
        res,
        Array.from({ length: 200 }, () => chunk({ content: 'tok ' })),
        { pauseMs: 10 },
      ),
    );
    const controller = new AbortController();
    const result = await backend().generate(HISTORY, TOOLS, {
      signal: controller.signal,
      onToken: () => {
        if (!controller.signal.aborted) setTimeout(() => controller.abort(), 50);
      },
    });
    expect(result.finishReason).toBe('aborted');
    expect(result.message.content).toMatch(/^(tok )+$/);
    expect(result.message.content.length).toBeLessThan(800);
  });
});

describe('OpenAIBackend.countTokens and ping', () => {
  test('vLLM /tokenize counts the templated prompt and teaches the context length', async () => {
    server.script((req, res) => {
      if (req.path === '/tokenize') return json(res, 200, { count: 4321, max_model_len: 131072, tokens: [] });
      json(res, 404, { detail: 'Not Found' });
    });
    const b = backend();
    expect(await b.countTokens(HISTORY, TOOLS)).toBe(4321);
    expect(server.requests[0]!.body).toMatchObject({ model: 'frognano-4b', add_generation_prompt: true, tools: TOOLS });
    expect(server.requests[0]!.body.messages).toHaveLength(HISTORY.length);
    expect(b.info()).toEqual({
      backend: 'openai',
      model: 'frognano-4b',
      device: `remote ${server.url}`,
      contextLength: 131072,
    });
  });

  test('llama.cpp: /apply-template then /tokenize', async () => {
    server.script((req, res) => {
      if (req.path === '/apply-template')
        return json(res, 200, { prompt: '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n' });
      if (req.path === '/tokenize' && typeof req.body.content === 'string')
        return json(res, 200, { tokens: [1, 2, 3, 4, 5, 6, 7] });
      json(res, 400, { error: { message: 'bad request' } });
    });
    const b = backend();
    expect(await b.countTokens([{ role: 'user', content: 'hi' }], [])).toBe(7);
    // The working method is remembered: the next count goes straight to it (the same prompt is not asked twice).
    server.requests.length = 0;
    expect(await b.countTokens([{ role: 'user', content: 'hi' }], [])).toBe(7);
    expect(server.requests).toHaveLength(0);
    expect(await b.countTokens([{ role: 'user', content: 'hello' }], [])).toBe(7);
    expect(server.requests.map((r) => r.path)).toEqual(['/apply-template', '/tokenize']);
  });

  test('no tokenizer endpoint: a conservative estimate, and no more probing', async () => {
    server.script((_req, res) => json(res, 404, { detail: 'Not Found' }));
    const b = backend();
    expect(await b.countTokens(HISTORY, TOOLS)).toBe(overestimatePromptTokens(HISTORY, TOOLS));
    server.requests.length = 0;
    await b.countTokens(HISTORY, TOOLS);
    expect(server.requests).toHaveLength(0);
  });

  test('ping: served model found, missing, or server unreachable', async () => {
    server.script((req, res) =>
      json(res, 200, {
        object: 'list',
        data: [{ id: 'frognano-4b', object: 'model', max_model_len: 131072 }, { id: 'other' }],
      }),
    );
    server.answerDiscovery = true;
    const ok = await backend({ apiKey: 'sk-ping-1234567890' }).ping();
    expect(ok).toEqual({
      ok: true,
      models: ['frognano-4b', 'other'],
      message: `${server.url} serves "frognano-4b", context 131072 tokens.`,
    });
    expect(server.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' });
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-ping-1234567890');

    const missing = await backend({ model: 'qwen' }).ping();
    expect(missing.ok).toBe(false);
    expect(missing.message).toBe(
      `${server.url} is up but does not serve "qwen" (it serves: frognano-4b, other); set FROGNANO_OPENAI_MODEL.`,
    );

    const closed = new ScriptedServer({ answerDiscovery: false });
    await closed.start();
    await closed.stop();
    const down = await new OpenAIBackend({ baseUrl: closed.url, model: 'm' }).ping();
    expect(down).toEqual({
      ok: false,
      models: [],
      message: expect.stringMatching(/^cannot reach http:\/\/127\.0\.0\.1:\d+\/v1: ECONNREFUSED/),
    });
  });

  test('credentials in the base URL travel as Basic auth and never show up in messages', async () => {
    server.script((_req, res) => json(res, 403, { error: { message: 'forbidden' } }));
    const url = server.url.replace('http://', 'http://user:hunter2hunter2@');
    const b = new OpenAIBackend({ baseUrl: url, model: 'm', maxRetries: 0 });
    const err = await rejection(b.generate(HISTORY, TOOLS));
    expect(server.requests[0]!.headers.authorization).toBe(
      `Basic ${Buffer.from('user:hunter2hunter2').toString('base64')}`,
    );
    expect(err.message).toBe(`${server.url} answered 403 Forbidden: forbidden. Check FROGNANO_OPENAI_API_KEY.`);
    expect(b.info().device).toBe(`remote ${server.url}`);
  });
});
