import { createBackend, OpenAIBackend, type BackendConfig } from '../../inference/index.js';
import type { ModelBackend } from '../../inference/types.js';
import { formatDuration } from '../format.js';
import { describeBackend } from '../modelConfig.js';
import { check, type CheckResult } from './check.js';

const NAME = 'Model';

/** What generate() is asked in the one-token smoke test. */
const PROBE = [{ role: 'user' as const, content: 'Say OK.' }];

/**
 * The configured model really works: an ONNX directory has its files, loads in onnxruntime and generates
 * one token; an OpenAI-compatible endpoint answers and serves the model (C2's ping); a replay file parses.
 * `cfg` undefined means no model is configured, which only matters for running jobs: a warning (a failure when
 * `required`, as `doctor --model` asks).
 */
export async function checkModel(
  cfg: BackendConfig | undefined,
  configError?: string,
  opts: { required?: boolean } = {},
): Promise<CheckResult> {
  if (configError)
    return check.fail(
      NAME,
      configError,
      'fix the model options or the FROGNANO_BACKEND / FROGNANO_MODEL_DIR / FROGNANO_OPENAI_* variables',
    );
  if (!cfg) {
    const hint =
      'runners need one: --model-dir DIR (or FROGNANO_MODEL_DIR), or --endpoint URL --model NAME (or FROGNANO_OPENAI_BASE_URL + FROGNANO_OPENAI_MODEL)';
    // Asked to check the model (doctor --model), having none is a failure; in the full report, a warning.
    return opts.required
      ? check.fail(NAME, 'no model configured', hint)
      : check.warn(NAME, 'no model configured', hint);
  }
  const what = describeBackend(cfg);
  const started = Date.now();
  let backend: ModelBackend;
  try {
    if (cfg.kind === 'onnx') {
      // Fails fast with the name of the missing file before onnxruntime is even loaded.
      const { locateModelFiles } = await import('../../inference/onnx/modelFiles.js');
      await locateModelFiles(cfg.modelDir, { modelFile: cfg.modelFile, dtype: cfg.dtype });
    }
    backend = await createBackend(cfg);
  } catch (err) {
    return check.fail(
      NAME,
      `${what}: ${(err as Error).message}`,
      cfg.kind === 'onnx'
        ? 'the directory needs the ONNX graph (model.onnx, onnx/model.onnx or onnx/decoder_model_merged.onnx, or a dtype variant picked with FROGNANO_ONNX_DTYPE), tokenizer.json, tokenizer_config.json, config.json and a chat template (chat_template.jinja or in tokenizer_config.json)'
        : 'check the model options',
    );
  }
  const loadMs = Date.now() - started;
  try {
    if (backend instanceof OpenAIBackend) {
      const ping = await backend.ping();
      if (!ping.ok) {
        return check.fail(
          NAME,
          ping.message,
          'start the server or fix --endpoint / --model (FROGNANO_OPENAI_BASE_URL, FROGNANO_OPENAI_MODEL)',
        );
      }
      // The loop needs parsed tool calls: a server without its tool parser fails here, naming the flags.
      const tools = await backend.probeToolCalls();
      return tools.ok
        ? check.ok(NAME, `${ping.message.replace(/\.$/, '')}; ${tools.message}`)
        : check.fail(
            NAME,
            tools.message,
            'restart the model server with the flags named (see docs/inference.md, "Using an OpenAI-compatible endpoint")',
          );
    }
    if (cfg.kind === 'replay') return check.ok(NAME, `${what}: script parses`);
    const gen = await backend.generate(PROBE, [], { maxNewTokens: 1 });
    const info = backend.info();
    return check.ok(
      NAME,
      `${what}: loaded in ${formatDuration(loadMs)}, generated ${gen.completionTokens} token in ${formatDuration(gen.elapsedMs)}` +
        `${info.contextLength ? `, context ${info.contextLength}` : ''}${info.device ? ` on ${info.device}` : ''}${onnxPicks(backend)}`,
    );
  } catch (err) {
    return check.fail(
      NAME,
      `${what}: loaded but generating failed: ${(err as Error).message}`,
      'the model files may be incomplete or from an unsupported export',
    );
  } finally {
    await (backend as ModelBackend).close?.().catch(() => undefined);
  }
}

/** Which files the onnx backend picked: `; decoder onnx/x_q4.onnx + onnx/embed_tokens_q4.onnx (q4), chat template from chat_template.jinja`. */
function onnxPicks(backend: ModelBackend): string {
  const report = (
    backend as { modelReport?: () => { decoder: string; embed?: string; dtype: string; chatTemplate: string } }
  ).modelReport?.();
  if (!report) return '';
  return `; decoder ${report.decoder}${report.embed ? ` + ${report.embed}` : ''} (${report.dtype}), chat template from ${report.chatTemplate}`;
}
