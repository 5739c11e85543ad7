/**
 * `frognano doctor --model`: the model check alone, exit 0/1, against the model-server stand-ins replaying
 * test/fixtures/model-servers (vLLM with and without its tool parser, llama-server --jinja) and the committed ONNX
 * export; none of the other checks (Redis, sandboxes, GitHub App) run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { ScriptedServer, loadFixture, router } from '../inference/modelServerReplay.js';
import { ROOT, runCliInProcess } from './helpers.js';

const vllm = (name: string) => loadFixture('vllm', name);
const llamacpp = (name: string) => loadFixture('llamacpp', name);
const server = new ScriptedServer();
beforeAll(() => server.start());
afterAll(() => server.stop());

async function doctor(args: string[], env: NodeJS.ProcessEnv = {}) {
  // No REDIS_URL, no sandbox, no App: the full doctor would fail on them; --model must not look.
  return runCliInProcess(['doctor', ...args], { env: { PATH: process.env.PATH, ...env }, cwd: ROOT });
}

/** Every line of the report names the model: nothing else was checked. */
function onlyModel(out: string): string {
  const lines = out.trim().split('\n');
  expect(lines.filter((l) => /^[✓✗!] /.test(l)).map((l) => l.split(/\s+/)[1])).toEqual(['Model']);
  return lines[0]!;
}

describe('frognano doctor --model against a model server', () => {
  it('vLLM with its tool and reasoning parsers: serves the model and answers with a parsed tool call, exit 0', async () => {
    server.script(router({ '/v1/models': vllm('models') }, [vllm('final-answer'), vllm('required-tool-call')]));
    const r = await doctor(['--endpoint', server.url, '--model', 'frognano-4b']);
    expect(onlyModel(r.out)).toBe(
      `✓ Model  ${server.url} serves "frognano-4b", context 8192 tokens; answers with parsed tool calls (report_status, finish_reason stop).`,
    );
    expect(r.out).toContain('All required checks passed.');
    expect(r.code).toBe(0);
    expect(server.chats.map((c) => c.body.tool_choice)).toEqual(['auto', 'required']);
  });

  it('vLLM started without --enable-auto-tool-choice: exit 1, naming the flags', async () => {
    server.script(router({ '/v1/models': vllm('models') }, [vllm('auto-tool-choice-rejected')]));
    const r = await doctor(['--model', '--endpoint', server.url, '--model', 'frognano-4b']);
    expect(onlyModel(r.out)).toContain(
      'refuses tool_choice "auto": start vLLM with --enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3',
    );
    expect(r.out).toContain('1 required check failed: Model.');
    expect(r.code).toBe(1);
  });

  it('a server without a tool parser (answers in text, no tool_calls): exit 1', async () => {
    server.script(router({ '/v1/models': vllm('models') }, [vllm('final-answer'), vllm('final-answer')]));
    const r = await doctor(['--endpoint', server.url, '--model', 'frognano-4b']);
    expect(onlyModel(r.out)).toContain(`✗ Model  ${server.url} answered without tool_calls: start vLLM with`);
    expect(r.out).toContain('or llama-server with --jinja.');
    expect(r.code).toBe(1);
  });

  it('llama-server --jinja (recorded), from the FROGNANO_OPENAI_* settings: exit 0', async () => {
    server.script(
      router({ '/v1/models': llamacpp('models') }, [llamacpp('auto-probe'), llamacpp('required-tool-call')]),
    );
    const r = await doctor(['--model'], {
      FROGNANO_BACKEND: 'openai',
      FROGNANO_OPENAI_BASE_URL: server.url,
      FROGNANO_OPENAI_MODEL: 'frognano-4b',
    });
    expect(onlyModel(r.out)).toMatch(
      /^✓ Model .*answers with parsed tool calls \(report_status, finish_reason tool_calls\)\.$/,
    );
    expect(r.code).toBe(0);
  });

  it('a model the server does not serve: exit 1 with the names it serves', async () => {
    server.script(router({ '/v1/models': vllm('models') }, []));
    const r = await doctor(['--endpoint', server.url, '--model', 'other-model', '--json']);
    const report = JSON.parse(r.out);
    expect(report.ok).toBe(false);
    expect(report.checks).toHaveLength(1);
    expect(report.checks[0]).toMatchObject({ name: 'Model', status: 'fail', required: true });
    expect(report.checks[0].detail).toContain('frognano-4b');
    expect(r.code).toBe(1);
    expect(server.chats).toHaveLength(0);
  });
});

describe('frognano doctor --model, ONNX and nothing', () => {
  it('the committed Qwen3.5 export loads and generates a token: one line, exit 0', async () => {
    const dir = path.join(ROOT, 'test', 'fixtures', 'qwen35-tiny');
    const r = await doctor(['--model', '--model-dir', dir]);
    expect(onlyModel(r.out)).toMatch(/^✓ Model {2}ONNX model in .*qwen35-tiny: loaded in .*generated 1 token/);
    expect(r.code).toBe(0);
  });

  it('no model configured is a failure here (a warning in the full report), exit 1', async () => {
    const r = await doctor(['--model']);
    expect(onlyModel(r.out)).toBe('✗ Model  no model configured');
    expect(r.out).toContain('→ runners need one: --model-dir DIR');
    expect(r.code).toBe(1);
  });

  it('--model NAME without --endpoint is still a usage error', async () => {
    const r = await doctor(['--model', 'frognano-4b']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--model names the model on an --endpoint; give --endpoint URL too.');
  });
});
