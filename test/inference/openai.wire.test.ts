/** The pieces under OpenAIBackend that have rules of their own: retry timing and the SSE reader. */
import {
  DEFAULT_RETRY_POLICY,
  backoffDelayMs,
  describeRetry,
  isRetryableStatus,
  parseRetryAfter,
  sleep,
} from '../../src/inference/retry.js';
import {
  contextOverflowFacts,
  describeHttpError,
  errorBody,
  isDeterministicServerError,
} from '../../src/inference/openai/serverErrors.js';
import { readSseData } from '../../src/inference/openai/sse.js';
import { toWireMessage } from '../../src/inference/openai/index.js';

function streamOf(parts: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const p of parts) controller.enqueue(typeof p === 'string' ? enc.encode(p) : p);
      controller.close();
    },
  });
}

async function collect(parts: (string | Uint8Array)[]): Promise<string[]> {
  const out: string[] = [];
  for await (const d of readSseData(streamOf(parts))) out.push(d);
  return out;
}

describe('retry policy', () => {
  test('backoff doubles up to the cap, with jitter between half and all of the step', () => {
    const p = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 1000, maxDelayMs: 5000 };
    expect([0, 1, 2, 3, 4].map((r) => backoffDelayMs(r, p, () => 0))).toEqual([500, 1000, 2000, 2500, 2500]);
    expect([0, 1, 2, 3, 4].map((r) => backoffDelayMs(r, p, () => 0.999999))).toEqual([1000, 2000, 4000, 5000, 5000]);
  });

  test('Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('7')).toBe(7000);
    expect(parseRetryAfter(' 0 ')).toBe(0);
    const now = Date.parse('Wed, 02 Dec 2026 12:00:00 GMT');
    expect(parseRetryAfter('Wed, 02 Dec 2026 12:00:30 GMT', now)).toBe(30000);
    expect(parseRetryAfter('Wed, 02 Dec 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });

  test('the default policy outlasts a model-server restart (2¼-4½ min of waiting) and is bounded', () => {
    const total = (random: number) =>
      Array.from({ length: DEFAULT_RETRY_POLICY.maxRetries }, (_, r) =>
        backoffDelayMs(r, DEFAULT_RETRY_POLICY, () => random),
      ).reduce((a, b) => a + b, 0);
    expect(total(0)).toBe(135_000);
    expect(total(0.999999)).toBe(270_000);
    expect(DEFAULT_RETRY_POLICY.maxRetryWindowMs).toBe(300_000);
  });

  test('a retry as one line for the CLI and the runner log', () => {
    expect(
      describeRetry({
        retry: 2,
        maxRetries: 10,
        delayMs: 4000,
        elapsedMs: 12_400,
        reason: 'http://vllm:8000/v1 answered 503 Service Unavailable: loading.',
      }),
    ).toBe(
      'model server: http://vllm:8000/v1 answered 503 Service Unavailable: loading. Retry 2/10 in 4.0 s (12 s so far)',
    );
  });

  test('which statuses are retried', () => {
    expect([408, 409, 429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 413, 422, 501, 505].some(isRetryableStatus)).toBe(false);
  });

  test('sleep rejects as soon as the signal aborts', async () => {
    const c = new AbortController();
    const started = Date.now();
    setTimeout(() => c.abort(new Error('stop')), 20);
    await expect(sleep(10_000, c.signal)).rejects.toThrow('stop');
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('readSseData', () => {
  test('events split at arbitrary byte boundaries, CRLF, comments and [DONE]', async () => {
    const text = ': ping\r\n\r\ndata: {"a":1}\r\n\r\nevent: x\ndata: {"b":2}\n\ndata: [DONE]\n\n';
    const bytes = new TextEncoder().encode(text);
    for (const size of [1, 2, 3, 7, bytes.length]) {
      const parts: Uint8Array[] = [];
      for (let i = 0; i < bytes.length; i += size) parts.push(bytes.slice(i, i + size));
      expect(await collect(parts)).toEqual(['{"a":1}', '{"b":2}', '[DONE]']);
    }
  });

  test('multi-byte UTF-8 split across chunks survives', async () => {
    const bytes = new TextEncoder().encode('data: {"c":"héllo 🐸"}\n\n');
    const cut = bytes.indexOf(0xf0) + 2; // inside the frog's 4-byte sequence
    expect(await collect([bytes.slice(0, cut), bytes.slice(cut)])).toEqual(['{"c":"héllo 🐸"}']);
  });

  test('multi-line data joins with newlines; a last event without a blank line is still read', async () => {
    expect(await collect(['data: line1\ndata: line2\n\n', 'data:x'])).toEqual(['line1\nline2', 'x']);
  });

  test('an oversized event is refused', async () => {
    const big = `data: ${'x'.repeat(100)}\n\n`;
    await expect(
      (async () => {
        for await (const _ of readSseData(streamOf([big]), 50)) void _;
      })(),
    ).rejects.toThrow('stream event larger than 50 bytes');
  });
});

describe('toWireMessage', () => {
  test('tool messages without a name, users, systems', () => {
    expect(toWireMessage({ role: 'tool', tool_call_id: 'c', content: 'out' })).toEqual({
      role: 'tool',
      tool_call_id: 'c',
      content: 'out',
    });
    expect(toWireMessage({ role: 'system', content: 's', reasoning: 'ignored' })).toEqual({
      role: 'system',
      content: 's',
    });
    expect(toWireMessage({ role: 'assistant', content: 'a', tool_calls: [] })).toEqual({
      role: 'assistant',
      content: 'a',
    });
  });
});

describe('server error bodies', () => {
  test('llama.cpp exceed_context_size_error carries its numbers', () => {
    const body = errorBody(
      '{"error":{"code":400,"message":"request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}',
    );
    expect(contextOverflowFacts(body)).toEqual({ contextLength: 4096, promptTokens: 5000 });
  });

  test('SGLang and llama.cpp (context shift off) wordings are overflows; a deadline is not', () => {
    expect(
      contextOverflowFacts(
        errorBody(
          '{"object":"error","message":"The input (70001 tokens) is longer than the model\'s context length (65536 tokens).","type":"BadRequestError","code":400}',
        ),
      ),
    ).toEqual({
      contextLength: 65536,
      promptTokens: 70001,
    });
    expect(
      contextOverflowFacts(
        errorBody(
          '{"error":{"message":"input (9000 tokens) is larger than the max context size (8192 tokens). skipping"}}',
        ),
      ),
    ).toEqual({
      contextLength: 8192,
      promptTokens: 9000,
    });
    expect(
      contextOverflowFacts(errorBody('{"error":{"message":"rpc error: context deadline exceeded"}}')),
    ).toBeUndefined();
  });

  test('500s that reject the request itself', () => {
    expect(
      isDeterministicServerError(
        errorBody('{"error":{"message":"Failed to parse input at pos 12","type":"server_error","code":500}}'),
      ),
    ).toBe(true);
    expect(isDeterministicServerError(errorBody('{"error":{"message":"x","type":"invalid_request_error"}}'))).toBe(
      true,
    );
    expect(
      isDeterministicServerError(
        errorBody('{"error":{"message":"CUDA error: an illegal memory access","type":"server_error"}}'),
      ),
    ).toBe(false);
  });

  test('no double period after a server message that has one', () => {
    expect(describeHttpError('http://h/v1', 400, 'Bad Request', '{"error":{"message":"Too long."}}')).toBe(
      'http://h/v1 answered 400 Bad Request: Too long.',
    );
    expect(describeHttpError('http://h/v1', 400, 'Bad Request', '{"error":{"message":"Too long"}}')).toBe(
      'http://h/v1 answered 400 Bad Request: Too long.',
    );
  });
});
