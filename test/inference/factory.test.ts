import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildTinyModel } from '../support/tinyModel/buildTinyModel.js';
import {
  BackendConfigError,
  BackendConfigSchema,
  OpenAIBackend,
  backendConfigFromEnv,
  createBackend,
} from '../../src/inference/index.js';

function envError(env: NodeJS.ProcessEnv): string {
  try {
    backendConfigFromEnv(env);
  } catch (e) {
    expect(e).toBeInstanceOf(BackendConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a configuration error');
}

describe('backendConfigFromEnv', () => {
  test('openai with every option', () => {
    expect(
      backendConfigFromEnv({
        FROGNANO_BACKEND: 'openai',
        FROGNANO_OPENAI_BASE_URL: 'http://gpu-box:8000/v1/',
        FROGNANO_OPENAI_MODEL: 'frognano-4b',
        FROGNANO_OPENAI_API_KEY: 'sk-abc',
        FROGNANO_OPENAI_TIMEOUT_MS: '300000',
        FROGNANO_OPENAI_MAX_RETRIES: '2',
        FROGNANO_OPENAI_CONTEXT_LENGTH: '131072',
        FROGNANO_OPENAI_EXTRA_BODY: '{"chat_template_kwargs":{"enable_thinking":false}}',
      }),
    ).toEqual({
      kind: 'openai',
      baseUrl: 'http://gpu-box:8000/v1',
      model: 'frognano-4b',
      apiKey: 'sk-abc',
      timeoutMs: 300000,
      maxRetries: 2,
      contextLength: 131072,
      extraBody: { chat_template_kwargs: { enable_thinking: false } },
    });
  });

  test('the kind is inferred from the one backend variable set; a bare host gets /v1', () => {
    expect(
      backendConfigFromEnv({ FROGNANO_OPENAI_BASE_URL: 'http://localhost:8080', FROGNANO_OPENAI_MODEL: 'm' }),
    ).toEqual({
      kind: 'openai',
      baseUrl: 'http://localhost:8080/v1',
      model: 'm',
    });
    expect(backendConfigFromEnv({ FROGNANO_MODEL_DIR: '/models/frognano' })).toEqual({
      kind: 'onnx',
      modelDir: '/models/frognano',
      device: 'cpu',
    });
    expect(backendConfigFromEnv({ FROGNANO_REPLAY_FILE: 'run.json' })).toEqual({ kind: 'replay', file: 'run.json' });
  });

  test('onnx options', () => {
    expect(
      backendConfigFromEnv({
        FROGNANO_BACKEND: 'ONNX',
        FROGNANO_MODEL_DIR: '/m',
        FROGNANO_ONNX_DEVICE: 'CUDA',
        FROGNANO_ONNX_THREADS: '8',
        FROGNANO_ONNX_MODEL_FILE: 'onnx/model_q4.onnx',
        FROGNANO_ONNX_DTYPE: 'Q4',
      }),
    ).toEqual({
      kind: 'onnx',
      modelDir: '/m',
      device: 'cuda',
      threads: 8,
      modelFile: 'onnx/model_q4.onnx',
      dtype: 'q4',
    });
    expect(envError({ FROGNANO_MODEL_DIR: '/m', FROGNANO_ONNX_DTYPE: 'fp8' })).toMatch(
      /^Invalid model backend configuration: FROGNANO_ONNX_DTYPE \(got "fp8"\): .*"fp16".*"q4"/,
    );
  });

  test('nothing or too much configured', () => {
    expect(envError({})).toMatch(/^No model backend configured: set FROGNANO_BACKEND=onnx with FROGNANO_MODEL_DIR/);
    expect(envError({ FROGNANO_MODEL_DIR: '/m', FROGNANO_OPENAI_BASE_URL: 'http://x/v1' })).toBe(
      'Both FROGNANO_MODEL_DIR and FROGNANO_OPENAI_BASE_URL are set: choose one with FROGNANO_BACKEND=onnx|openai|replay.',
    );
    expect(envError({ FROGNANO_BACKEND: 'gguf' })).toBe('FROGNANO_BACKEND=gguf is not one of onnx, openai, replay.');
  });

  test('errors name the variable to fix', () => {
    expect(envError({ FROGNANO_BACKEND: 'openai' })).toBe(
      'Invalid model backend configuration: FROGNANO_OPENAI_BASE_URL: must be an http:// or https:// URL; ' +
        'FROGNANO_OPENAI_MODEL: is not set.',
    );
    expect(
      envError({ FROGNANO_BACKEND: 'openai', FROGNANO_OPENAI_BASE_URL: 'gpu-box:8000', FROGNANO_OPENAI_MODEL: 'm' }),
    ).toBe(
      'Invalid model backend configuration: FROGNANO_OPENAI_BASE_URL (got "gpu-box:8000"): must be an http:// or https:// URL.',
    );
    expect(envError({ FROGNANO_BACKEND: 'onnx' })).toBe(
      'Invalid model backend configuration: FROGNANO_MODEL_DIR: is not set.',
    );
    expect(envError({ FROGNANO_MODEL_DIR: '/m', FROGNANO_ONNX_DEVICE: 'tpu' })).toMatch(
      /^Invalid model backend configuration: FROGNANO_ONNX_DEVICE \(got "tpu"\): .*"cpu".*"cuda"/,
    );
    expect(envError({ FROGNANO_MODEL_DIR: '/m', FROGNANO_ONNX_THREADS: 'many' })).toBe(
      'FROGNANO_ONNX_THREADS=many is not a whole number.',
    );
    expect(
      envError({ FROGNANO_OPENAI_BASE_URL: 'http://x', FROGNANO_OPENAI_MODEL: 'm', FROGNANO_OPENAI_MAX_RETRIES: '50' }),
    ).toMatch(/^Invalid model backend configuration: FROGNANO_OPENAI_MAX_RETRIES \(got "50"\): /);
    expect(
      envError({ FROGNANO_OPENAI_BASE_URL: 'http://x', FROGNANO_OPENAI_MODEL: 'm', FROGNANO_OPENAI_EXTRA_BODY: '[1]' }),
    ).toMatch(/^FROGNANO_OPENAI_EXTRA_BODY must be a JSON object/);
    expect(envError({ FROGNANO_REPLAY_FILE: '  ', FROGNANO_BACKEND: 'replay' })).toBe(
      'Invalid model backend configuration: FROGNANO_REPLAY_FILE: is not set.',
    );
  });

  test('a bad API key value is never echoed', () => {
    const message = envError({
      FROGNANO_OPENAI_BASE_URL: 'nope',
      FROGNANO_OPENAI_MODEL: 'm',
      FROGNANO_OPENAI_API_KEY: 'sk-very-secret',
    });
    expect(message).not.toContain('sk-very-secret');
  });
});

describe('createBackend', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'frognano-factory-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  test('openai: validated config becomes an OpenAIBackend', async () => {
    const b = await createBackend({ kind: 'openai', baseUrl: 'http://127.0.0.1:9/', model: 'frognano-4b' });
    expect(b).toBeInstanceOf(OpenAIBackend);
    expect(b.info()).toEqual({ backend: 'openai', model: 'frognano-4b', device: 'remote http://127.0.0.1:9/v1' });
  });

  test('invalid config objects are rejected with field names', async () => {
    await expect(createBackend({ kind: 'openai', baseUrl: 'ftp://x', model: '' })).rejects.toThrow(
      'Invalid model backend configuration: backend.baseUrl: must be an http:// or https:// URL; backend.model: model name is required',
    );
    await expect(createBackend({ kind: 'tpu' } as never)).rejects.toThrow(
      /^Invalid model backend configuration: backend.kind: /,
    );
  });

  test('replay: loads the script file and replays its turns', async () => {
    const file = path.join(dir, 'script.json');
    await writeFile(
      file,
      JSON.stringify({
        turns: [
          { content: 'Listing.', tool_calls: [{ name: 'Bash', arguments: { command: 'ls' } }] },
          { content: 'Done.' },
        ],
      }),
    );
    const b = await createBackend(backendConfigFromEnv({ FROGNANO_REPLAY_FILE: file }));
    expect(b.info().backend).toBe('replay');
    const first = await b.generate([{ role: 'user', content: 'go' }], []);
    expect(first.message.tool_calls?.[0]).toMatchObject({ name: 'Bash', arguments: { command: 'ls' } });
  });

  test('onnx: loads a real (tiny) exported model directory', async () => {
    const modelDir = path.join(dir, 'tiny');
    await buildTinyModel(modelDir);
    const b = await createBackend({ kind: 'onnx', modelDir, threads: 1 });
    try {
      expect(b.info().backend).toBe('onnx');
    } finally {
      await b.close?.();
    }
  });

  test('onnx: a missing model directory fails with a message naming it', async () => {
    await expect(createBackend({ kind: 'onnx', modelDir: path.join(dir, 'absent') })).rejects.toThrow(/absent/);
  });

  test('the schema is the single source of defaults', () => {
    expect(BackendConfigSchema.parse({ kind: 'onnx', modelDir: '/m' })).toEqual({
      kind: 'onnx',
      modelDir: '/m',
      device: 'cpu',
    });
  });
});
