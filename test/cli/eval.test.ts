import { jest } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { dockerForTests } from '../sandbox/support.js';
import {
  FIX_SCRIPT,
  FIXTURE_ACTIVATION,
  FIXTURE_ENV_VALUE,
  prepareFixtures,
  predictions,
  readJson,
} from './evalFixtures.js';
import { runFrognano, tempDir, writeJson, type CliRun } from './helpers.js';

// `frognano eval` as a subprocess on fixture SWE-bench instances whose images are built here FROM the sandbox test
// image (evalFixtures.ts), in real docker sandboxes, with the scripted (replay) model.
jest.setTimeout(300_000);

let work: string;
let fx: Awaited<ReturnType<typeof prepareFixtures>> | undefined;
let fixScript: string;

beforeAll(async () => {
  work = await tempDir('eval');
  if (!(await dockerForTests())) return;
  fx = await prepareFixtures(work);
  fixScript = await writeJson(path.join(work, 'fix.json'), FIX_SCRIPT);
});

afterAll(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

function evalRun(out: string, extra: string[], opts: Parameters<typeof runFrognano>[1] = {}): Promise<CliRun> {
  const args = ['eval', '--dataset', fx!.dataset, '--out', out, '--image-template', fx!.template];
  return runFrognano([...args, '--activate', FIXTURE_ACTIVATION, ...extra], { timeoutMs: 240_000, ...opts });
}

/** The patch applied to the fixture's own repository makes its failing test pass (pytest on this machine). */
function patchFixes(id: string, patch: string): boolean {
  const copy = path.join(work, `apply-${id}-${Date.now()}`);
  execFileSync('cp', ['-r', path.join(work, 'ctx', id, 'testbed'), copy]);
  execFileSync('git', ['apply', '-'], { cwd: copy, input: patch });
  try {
    execFileSync('python3', ['-m', 'pytest', '-q', '-p', 'no:cacheprovider'], { cwd: copy, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('frognano eval (docker)', () => {
  const out = () => path.join(work, 'out');
  let first: CliRun;
  let wallMs = 0;

  beforeAll(async () => {
    if (!fx) return;
    const started = Date.now();
    first = await evalRun(out(), ['--replay', fixScript, '--workers', '2']);
    wallMs = Date.now() - started;
    console.log(`eval fixture run: 3 instances, 2 workers: ${(wallMs / 1000).toFixed(1)}s wall`);
  });

  test('three instances on two workers: predictions in the official format, a trajectory each, the summary', async () => {
    if (!fx) return;
    expect(first.stderr).not.toMatch(/unexpected error/);
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(/\[1\/3\] .* · ETA /);
    expect(first.stderr).toMatch(/\(2 running\)/);
    const preds = await predictions(out());
    expect(preds.map((p) => p.instance_id).sort()).toEqual([...fx.ids].sort());
    for (const p of preds) {
      expect(Object.keys(p)).toEqual(['instance_id', 'model_name_or_path', 'model_patch']);
      expect(p.model_name_or_path).toBe('replay');
      expect(p.model_patch).toMatch(/^diff --git a\/lib.py b\/lib.py/);
      expect(p.model_patch).not.toContain('__pycache__');
      expect(patchFixes(p.instance_id, p.model_patch)).toBe(true);
    }
    const t = await readJson(path.join(out(), 'instances', 'fixture__calc-1', 'trajectory.json'));
    expect(t.instance_id).toBe('fixture__calc-1');
    const user = t.messages.find((m: { role: string }) => m.role === 'user');
    expect(user.content).toBe('add() subtracts\nadd(2, 3) returns -1 instead of 5.\n');
    // The model's shell ran in /testbed with the image's environment activated, and saw the failing test.
    const firstTool = t.messages.find((m: { role: string }) => m.role === 'tool').content;
    expect(firstTool).toContain('/testbed\n');
    expect(firstTool).toContain(`env=${FIXTURE_ENV_VALUE}`);
    expect(firstTool).toContain('1 failed, 1 passed');
    const summary = await readJson(path.join(out(), 'eval-summary.json'));
    expect(summary.totals).toMatchObject({ instances: 3, finished: 3, errors: 0, patches: 3, turns: 9 });
    expect(summary.totals.exit_reasons).toEqual({ agent: 3 });
    expect(summary.last_run).toMatchObject({ workers: 2, interrupted: false });
    expect(summary.last_run.wall_sec).toBeGreaterThan(0);
    expect(summary.totals.completion_tokens).toBeGreaterThan(0);
    expect(summary.instances.map((i: { instance_id: string }) => i.instance_id)).toEqual(fx.ids);
    expect(summary.instances[0]).toMatchObject({ status: 'finished', exit_reason: 'agent', turns: 3, error: null });
    const dataset = await readJson(path.join(out(), 'eval-dataset.json'));
    expect(dataset.map((i: { instance_id: string }) => i.instance_id)).toEqual(fx.ids);
  });

  test('a second run skips what is done; an instance without its prediction runs again', async () => {
    if (!fx) return;
    // Nothing left to run, so --grade goes straight to the harness: with a Python that lacks swebench, a setup error.
    const again = await evalRun(out(), ['--replay', fixScript, '--grade', '--python', 'python3']);
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('swebench is not installed for python3');
    expect(again.stderr).toContain('3 of 3 instances already done');
    expect(again.stderr).not.toContain('start ');
    const preds = await predictions(out());
    const kept = preds.filter((p) => p.instance_id !== 'fixture__strings-2');
    await fs.writeFile(path.join(out(), 'predictions.jsonl'), kept.map((p) => JSON.stringify(p)).join('\n') + '\n');
    const resumed = await evalRun(out(), ['--replay', fixScript, '--workers', '2']);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toContain('2 of 3 instances already done');
    expect(resumed.stderr.match(/start /g)).toHaveLength(1);
    expect(resumed.stderr).toContain('start fixture__strings-2');
    expect((await predictions(out())).map((p) => p.instance_id).sort()).toEqual([...fx.ids].sort());
  });

  test('an instance its image cannot run gets a clear preflight error, no prediction, and exit 4', async () => {
    if (!fx) return;
    const rows = (await fs.readFile(fx.dataset, 'utf8')).split('\n').filter(Boolean);
    const wrongBase = { ...JSON.parse(rows[0]), base_commit: 'b'.repeat(40) };
    const bad = path.join(work, 'bad.jsonl');
    await fs.writeFile(bad, `${JSON.stringify(wrongBase)}\n`);
    const o = path.join(work, 'out-bad');
    // The default activation (SWE-bench's conda) is not in the fixture image either.
    const run = await runFrognano(
      ['eval', '--dataset', bad, '--out', o, '--image-template', fx.template, '--replay', fixScript],
      { timeoutMs: 120_000 },
    );
    expect(run.code).toBe(4);
    expect(run.stderr).toMatch(/fixture__calc-1: error: preflight: .*not the instance's base_commit b{40}/);
    expect(run.stderr).toContain('the environment activation failed');
    expect(await predictions(o)).toEqual([]);
    const summary = await readJson(path.join(o, 'eval-summary.json'));
    expect(summary.totals).toMatchObject({ instances: 1, finished: 0, errors: 1 });
    expect(summary.totals.exit_reasons).toEqual({ preflight_error: 1 });

    const missing = await runFrognano(
      ['eval', '--dataset', fx.dataset, '--out', o, '--instances', 'fixture__calc-3', '--replay', fixScript],
      { timeoutMs: 120_000 },
    );
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain(
      'preflight: image swebench/sweb.eval.x86_64.fixture_1776_calc-3:latest is not here (docker pull',
    );
  });

  test('Ctrl-C stops the running instance cleanly and keeps what is done', async () => {
    if (!fx) return;
    // Slow on the instance with tests/test_neg.py (fixture__calc-3): the first one finishes, the second is stopped.
    const command = 'if [ -f tests/test_neg.py ]; then sleep 120; fi; pwd';
    const slow = {
      turns: [{ content: '', tool_calls: [{ name: 'Bash', arguments: { command } }] }, ...FIX_SCRIPT.turns.slice(1)],
    };
    const script = await writeJson(path.join(work, 'slow.json'), slow);
    const o = path.join(work, 'out-int');
    let sent = false;
    let pid: number | undefined;
    const run = await evalRun(o, ['--replay', script, '--instances', 'fixture__calc-1,fixture__calc-3'], {
      onStderr: (text, child) => {
        pid = child.pid;
        if (!sent && text.includes('start fixture__calc-3')) {
          sent = true;
          setTimeout(() => child.kill('SIGINT'), 3000);
        }
      },
    });
    expect(run.code).toBe(130);
    expect(run.stdout).toContain('Interrupted');
    expect((await predictions(o)).map((p) => p.instance_id)).toEqual(['fixture__calc-1']);
    const summary = await readJson(path.join(o, 'eval-summary.json'));
    expect(summary.totals).toMatchObject({ instances: 2, finished: 1, not_run: 1 });
    const left = execFileSync('docker', ['ps', '-aq', '--filter', `label=dev.frognano.pid=${pid}`], {
      encoding: 'utf8',
    });
    expect(left.trim()).toBe('');
  });
});
