/**
 * `frognano model export`: the input checks, argument handling, finding the Python (a real python3 in a venv without
 * torch; the export venv created with a PyPI that refuses connections), the load check on the committed Qwen3.5
 * export, and, where some Python has torch and transformers>=5, the whole export of a tiny random-weight Qwen3.5
 * checkpoint compared with PyTorch's greedy tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { CliError } from '../../src/cli/exitCodes.js';
import { checkExportModules, defaultExportVenv } from '../../src/cli/model/exportPython.js';
import { verifyExport } from '../../src/cli/model/exportRun.js';
import { decodeLoop } from '../../src/inference/onnx/decode.js';
import { createRng } from '../../src/inference/onnx/sampling.js';
import { HubStandIn } from '../support/hubStandIn.js';
import { ROOT, runCliInProcess } from './helpers.js';

const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'qwen35-tiny');
const REQUIREMENTS = path.join(ROOT, 'scripts', 'export-requirements.txt');

let work: string;
/** A real Python 3 that cannot import torch: a venv of the system's python3, without pip or site-packages. */
let barePython: string;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'frognano-export-'));
  execFileSync('python3', ['-m', 'venv', '--without-pip', path.join(work, 'bare-venv')]);
  barePython = path.join(work, 'bare-venv', 'bin', 'python');
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** The CLI in process, with an environment of the test's own (no PIP_* or FROGNANO_* from the machine). */
async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const base = { PATH: process.env.PATH, HOME: path.join(work, 'home') };
  return runCliInProcess(args, { env: { ...base, ...env }, cwd: work });
}

/** A Hugging Face directory from the committed fixture's tokenizer and configs, with stand-in weights. */
async function hfDir(name: string, change?: (dir: string) => Promise<void>): Promise<string> {
  const dir = path.join(work, name);
  await mkdir(dir, { recursive: true });
  for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) {
    await cp(path.join(FIXTURE, f), path.join(dir, f));
  }
  await cp(path.join(FIXTURE, 'chat_template.jinja'), path.join(dir, 'chat_template.jinja'));
  await writeFile(path.join(dir, 'model.safetensors'), Buffer.alloc(4096));
  await change?.(dir);
  return dir;
}

describe('frognano model export: the input directory', () => {
  it('lists every problem of a directory that is not a Qwen3.5 checkpoint, with what to do', async () => {
    const dir = path.join(work, 'llama');
    await mkdir(dir);
    await writeFile(
      path.join(dir, 'config.json'),
      JSON.stringify({ model_type: 'llama', architectures: ['LlamaForCausalLM'] }),
    );
    await writeFile(path.join(dir, 'model-00001-of-00002.safetensors.incomplete'), 'x');
    const r = await cli(['model', 'export', dir, path.join(work, 'llama-onnx'), '--python', barePython]);
    expect(r.code).toBe(3);
    expect(r.err).toContain(`${dir} cannot be exported:`);
    expect(r.err).toContain(
      'config.json says model_type llama, architectures LlamaForCausalLM: the exporter handles Qwen3.5 (model_type qwen3_5',
    );
    expect(r.err).toContain('model-00001-of-00002.safetensors.incomplete: an unfinished download');
    expect(r.err).toContain(`no *.safetensors weights (download them with \`frognano model pull --dir ${dir}\`)`);
    expect(r.err).toContain('no tokenizer.json');
    expect(r.err).toContain('no tokenizer_config.json');
    expect(r.err).toContain('no chat template (chat_template.jinja, or chat_template in tokenizer_config.json)');
    // Nothing was started: no Python ran, no output directory was made.
    expect(existsSync(path.join(work, 'llama-onnx'))).toBe(false);
  });

  it('names shards the index lists but the directory lacks, and a missing config.json', async () => {
    const dir = await hfDir('sharded', async (d) => {
      await writeFile(
        path.join(d, 'model.safetensors.index.json'),
        JSON.stringify({ weight_map: { a: 'model.safetensors', b: 'model-00002-of-00002.safetensors' } }),
      );
    });
    const r = await cli(['model', 'export', dir, path.join(work, 'sharded-onnx')]);
    expect(r.code).toBe(3);
    expect(r.err).toContain('model.safetensors.index.json names shards that are not there: model-00002-of-00002');
    const bare = path.join(work, 'empty');
    await mkdir(bare);
    const none = await cli(['model', 'export', bare, path.join(work, 'empty-onnx')]);
    expect(none.err).toContain('no config.json: not a Hugging Face model directory');
    const missing = await cli(['model', 'export', path.join(work, 'nowhere'), path.join(work, 'x')]);
    expect(missing.code).toBe(3);
    expect(missing.err).toContain(`${path.join(work, 'nowhere')} is not a directory`);
  });

  it('takes the chat template from tokenizer_config.json when there is no chat_template.jinja', async () => {
    const dir = await hfDir('inline-template', async (d) => {
      await rm(path.join(d, 'chat_template.jinja'));
      const tc = JSON.parse(await readFile(path.join(d, 'tokenizer_config.json'), 'utf8'));
      tc.chat_template = '{{ messages }}';
      await writeFile(path.join(d, 'tokenizer_config.json'), JSON.stringify(tc));
    });
    // The input passes; the bare Python is what stops it.
    const r = await cli(['model', 'export', dir, path.join(work, 'inline-onnx'), '--python', barePython]);
    expect(r.err).toContain('Exporting');
    expect(r.err).not.toContain('cannot be exported');
  });
});

describe('frognano model export: arguments', () => {
  it('usage errors: two directories, known dtypes, distinct directories, --help', async () => {
    const one = await cli(['model', 'export', 'only-one']);
    expect(one.code).toBe(2);
    expect(one.err).toContain('model export takes two directories: <hf-dir> <onnx-dir>.');
    expect(one.err).toContain('Usage: frognano model export <hf-dir> <onnx-dir>');
    const dtype = await cli(['model', 'export', 'a', 'b', '--dtype', 'fp32,q8']);
    expect(dtype.code).toBe(2);
    expect(dtype.err).toContain("--dtype takes fp32, fp16, q4 (one or more), got 'q8'.");
    const dir = await hfDir('same');
    const same = await cli(['model', 'export', dir, dir]);
    expect(same.code).toBe(2);
    expect(same.err).toContain('the ONNX directory must not be the Hugging Face directory.');
    const help = await cli(['model', 'export', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/RAM\s+about twice the fp32 size/);
  });

  it('refuses an output directory that holds something else, and says what the export will need', async () => {
    const dir = await hfDir('needs');
    const busy = path.join(work, 'busy');
    await mkdir(busy);
    await writeFile(path.join(busy, 'notes.txt'), 'mine');
    const r = await cli(['model', 'export', dir, busy]);
    expect(r.code).toBe(3);
    expect(r.err).toContain(`${busy} is not empty and holds no earlier export`);
    const est = await cli(['model', 'export', dir, path.join(work, 'needs-onnx'), '--python', barePython]);
    // 4096 bytes of bf16 weights: 2048 parameters, 8 KiB of fp32 graphs.
    expect(est.err).toContain(`Exporting ${dir} (Qwen3_5ForConditionalGeneration) to ONNX in`);
    expect(est.err).toContain('about 0.0 million parameters (4.0 KiB of safetensors weights)');
    expect(est.err).toContain('RAM: about 16.0 KiB (twice the fp32 size');
  });
});

describe('frognano model export: the Python', () => {
  it('a Python without the modules: one line naming them and the install command', async () => {
    const dir = await hfDir('py');
    const r = await cli(['model', 'export', dir, path.join(work, 'py-onnx'), '--python', barePython]);
    expect(r.code).toBe(3);
    expect(r.err).toContain(
      `${barePython} lacks the Python modules torch, transformers, onnx, onnxscript, onnxruntime (--python)`,
    );
    expect(r.err).toContain(`install them: ${barePython} -m pip install -r ${REQUIREMENTS}`);
    const fromEnv = await cli(['model', 'export', dir, path.join(work, 'py-onnx')], {
      FROGNANO_EXPORT_PYTHON: barePython,
    });
    expect(fromEnv.err).toContain('(FROGNANO_EXPORT_PYTHON)');
    const nowhere = await cli(['model', 'export', dir, path.join(work, 'py-onnx'), '--python', '/nonexistent/python']);
    expect(nowhere.code).toBe(3);
    expect(nowhere.err).toContain('cannot run /nonexistent/python');
  });

  it('without one, says it creates the export venv, and says pip could not reach PyPI and what to run by hand', async () => {
    const dir = await hfDir('venv');
    const cache = path.join(work, 'cache');
    const env = {
      XDG_CACHE_HOME: cache,
      // A PyPI that refuses connections (this machine's pip settings, mirrors included, left out).
      PIP_CONFIG_FILE: '/dev/null',
      PIP_INDEX_URL: 'http://127.0.0.1:9/simple',
      PIP_RETRIES: '0',
      PIP_TIMEOUT: '5',
    };
    const venv = path.join(cache, 'frognano', 'export-venv');
    expect(defaultExportVenv(env)).toBe(venv);
    const r = await cli(['model', 'export', dir, path.join(work, 'venv-onnx')], env);
    expect(r.code).toBe(3);
    expect(r.err).toContain(
      `no --python and no FROGNANO_EXPORT_PYTHON: creating ${venv} with python3 -m venv and installing torch, transformers, onnx, onnxscript, onnxruntime`,
    );
    expect(r.err).toMatch(/could not set up .*export-venv: pip could not reach PyPI \(/);
    expect(r.err).toContain(
      `run it by hand where PyPI is reachable: python3 -m venv ${venv} && ${venv}/bin/python -m pip install -r ${REQUIREMENTS}`,
    );
    // The venv itself was made (python3 -m venv works offline), so the next run only retries pip.
    expect(existsSync(path.join(venv, 'bin', 'python'))).toBe(true);
  }, 120_000);
});

describe('frognano model export: the load check', () => {
  it("loads the committed Qwen3.5 export and generates a token, as doctor's model check", async () => {
    const err = new PassThrough();
    let text = '';
    err.on('data', (c) => (text += c));
    await verifyExport(FIXTURE, 'q4', { stdout: new PassThrough(), stderr: err, env: {}, cwd: work });
    expect(text).toMatch(/^✓ Model {2}ONNX model in .*qwen35-tiny: loaded in .*generated 1 token/);
    expect(text).toContain('decoder onnx/decoder_model_merged_q4.onnx + onnx/embed_tokens_q4.onnx (q4)');
  });

  it('an export cut short (a truncated graph) fails the check, exit 4', async () => {
    const broken = path.join(work, 'broken-export');
    await cp(FIXTURE, broken, { recursive: true });
    const decoder = path.join(broken, 'onnx', 'decoder_model_merged.onnx');
    await writeFile(decoder, (await readFile(decoder)).subarray(0, 1000));
    const err = new PassThrough();
    let text = '';
    err.on('data', (c) => (text += c));
    const failure = await verifyExport(broken, 'fp32', { stdout: new PassThrough(), stderr: err, env: {}, cwd: work })
      .then(() => undefined)
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(CliError);
    expect((failure as CliError).exitCode).toBe(4);
    expect(text).toMatch(/^✗ Model {2}ONNX model in .*broken-export: /);
  });
});

/** A Python that has what the exporter imports, if this machine has one; else the reason it has none. */
async function torchPython(): Promise<{ python?: string; reason: string }> {
  const candidates = [process.env.FROGNANO_EXPORT_PYTHON, defaultExportVenv(process.env) + '/bin/python', 'python3'];
  const reasons: string[] = [];
  for (const python of candidates) {
    if (!python) continue;
    const check = await checkExportModules(python, process.env);
    if (check.ok) return { python, reason: '' };
    reasons.push(check.problem);
  }
  return { reason: reasons.join('; ') };
}

const found = await torchPython();
if (!found.python) {
  console.log(
    `SKIPPED: the end-to-end export (tiny Qwen3.5 checkpoint -> frognano model export -> greedy ids vs PyTorch) ` +
      `needs a Python with torch and transformers>=5 (FROGNANO_EXPORT_PYTHON, the export venv or python3): ${found.reason}`,
  );
}

/** The tiny random-weight Qwen3.5 checkpoint (Hugging Face layout, with reference.json), made once per run. */
async function tinyCheckpoint(): Promise<string> {
  const ckpt = path.join(work, 'tiny-hf');
  if (!existsSync(path.join(ckpt, 'reference.json'))) {
    execFileSync(
      found.python!,
      [path.join(ROOT, 'scripts', 'build-qwen35-fixture.py'), '--out', ckpt, '--checkpoint-only'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  }
  return ckpt;
}

describe('frognano model export end to end (needs torch)', () => {
  (found.python ? it : it.skip)(
    "a tiny random-weight Qwen3.5 checkpoint exports, and the onnx backend's greedy ids are PyTorch's",
    async () => {
      const ckpt = await tinyCheckpoint();
      const out = path.join(work, 'tiny-onnx');
      expect(existsSync(path.join(ckpt, 'model.safetensors'))).toBe(true);
      const r = await cli(['model', 'export', ckpt, out, '--python', found.python!, '--dtype', 'fp32']);
      if (r.code !== 0) throw new Error(`export failed (${r.code}):\n${r.err.slice(-3000)}`);
      expect(r.err).toContain('[5/5] copying the configs, tokenizer and chat template');
      expect(r.err).toMatch(/✓ Model {2}ONNX model in .*tiny-onnx: loaded in/);
      expect(r.out).toContain(`export FROGNANO_BACKEND=onnx FROGNANO_MODEL_DIR=${out} FROGNANO_ONNX_DTYPE=fp32`);
      expect(await readFile(path.join(out, 'chat_template.jinja'), 'utf8')).toBe(
        await readFile(path.join(ckpt, 'chat_template.jinja'), 'utf8'),
      );

      const ref = JSON.parse(await readFile(path.join(ckpt, 'reference.json'), 'utf8')) as {
        prompt_ids: Record<string, number[]>;
        greedy_ids: number[];
      };
      const { OnnxBackend } = await import('../../src/inference/onnx/backend.js');
      const backend = await OnnxBackend.load(out);
      try {
        const ids = ref.prompt_ids.first!;
        const pre = await backend.decoder.forward(ids, backend.decoder.newState());
        const gen = await decodeLoop(backend.decoder, pre.logits, pre.state, {
          maxNewTokens: ref.greedy_ids.length,
          eosTokenIds: new Set(),
          rng: createRng(0),
        });
        expect(gen.tokens).toEqual(ref.greedy_ids);
      } finally {
        await backend.close();
      }
    },
    15 * 60_000,
  );

  (found.python ? it : it.skip)(
    "the 4B's path on the tiny checkpoint: weights in external data files, fp16 and q4 without fp32, each loads",
    async () => {
      const ckpt = await tinyCheckpoint();
      const out = path.join(work, 'tiny-external');
      // Past 2 GB the exporter keeps weights beside the graphs; --external-data takes that path at any size.
      execFileSync(
        found.python!,
        [
          path.join(ROOT, 'scripts', 'export_onnx.py'),
          ckpt,
          out,
          '--dtype',
          'fp16,q4',
          '--external-data',
          '--no-check',
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      const files = (await readdir(path.join(out, 'onnx'))).sort();
      expect(files).toEqual([
        'decoder_model_merged_fp16.onnx',
        'decoder_model_merged_fp16.onnx_data',
        'decoder_model_merged_q4.onnx',
        'decoder_model_merged_q4.onnx_data',
        'embed_tokens_fp16.onnx',
        'embed_tokens_fp16.onnx_data',
        'embed_tokens_q4.onnx',
        'embed_tokens_q4.onnx_data',
      ]);
      // Readable by whoever may read the graph (onnx writes its data files 0600).
      const mode = (f: string) => statSync(path.join(out, 'onnx', f)).mode & 0o777;
      expect(mode('decoder_model_merged_q4.onnx_data')).toBe(mode('decoder_model_merged_q4.onnx'));
      for (const dtype of ['fp16', 'q4']) {
        await verifyExport(out, dtype, { stdout: new PassThrough(), stderr: new PassThrough(), env: {}, cwd: work });
      }
    },
    15 * 60_000,
  );

  (found.python ? it : it.skip)(
    'model pull --onnx from a Hub stand-in serving the tiny checkpoint: downloads, exports q4, and it loads',
    async () => {
      const ckpt = await tinyCheckpoint();
      const files: Record<string, Buffer> = {};
      for (const f of await readdir(ckpt)) if (f !== 'reference.json') files[f] = await readFile(path.join(ckpt, f));
      const hub = new HubStandIn('microsoft/FrogNano-4B-2609', files, 'hf_test');
      await hub.start();
      try {
        const env = { HF_ENDPOINT: hub.endpoint, HF_TOKEN: 'hf_test' };
        const r = await cli(
          ['model', 'pull', '--dir', 'pulled', '--onnx', 'pulled-onnx', '--python', found.python!],
          env,
        );
        if (r.code !== 0) throw new Error(`pull --onnx failed (${r.code}):\n${r.err.slice(-3000)}`);
        expect(r.out).toContain(`Model weights in ${path.join(work, 'pulled')} (checksums verified).`);
        expect(r.err).toMatch(/✓ Model {2}ONNX model in .*pulled-onnx: loaded in .*\(q4\)/);
        expect(r.out).toContain(`FROGNANO_MODEL_DIR=${path.join(work, 'pulled-onnx')} FROGNANO_ONNX_DTYPE=q4`);
        // q4 only: the fp32 graphs the variants were made from are gone.
        expect((await readdir(path.join(work, 'pulled-onnx', 'onnx'))).sort()).toEqual([
          'decoder_model_merged_q4.onnx',
          'embed_tokens_q4.onnx',
        ]);
      } finally {
        await hub.stop();
      }
    },
    15 * 60_000,
  );

  (found.python ? it : it.skip)(
    "the exporter's failure and the wall-time cap: exit 4 with its last line, or the limit named",
    async () => {
      const ckpt = await tinyCheckpoint();
      // Weights that are not safetensors: transformers refuses them after the input checks pass.
      const bad = path.join(work, 'tiny-bad');
      await cp(ckpt, bad, { recursive: true });
      await writeFile(path.join(bad, 'model.safetensors'), Buffer.alloc(4096));
      const failed = await cli(['model', 'export', bad, path.join(work, 'bad-onnx'), '--python', found.python!]);
      expect(failed.code).toBe(4);
      expect(failed.err).toMatch(/the exporter failed \(exit 1\): \S/);
      // What it left (an empty onnx/) does not stop the next run.
      const again = await cli(['model', 'export', bad, path.join(work, 'bad-onnx'), '--python', found.python!]);
      expect(again.err).not.toContain('is not empty');
      expect(again.code).toBe(4);
      const capped = await cli([
        'model',
        'export',
        ckpt,
        path.join(work, 'capped-onnx'),
        '--python',
        found.python!,
        '--timeout',
        '500ms',
      ]);
      expect(capped.code).toBe(4);
      expect(capped.err).toContain('the export did not finish within 0.5s (--timeout) and was stopped');
      expect(capped.err).toContain('give it longer with --timeout');
    },
    15 * 60_000,
  );
});
