import { promises as fs } from 'node:fs';
import path from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { loadDataset, seededShuffle, selectInstances } from '../../src/cli/eval/dataset.js';
import { imageFor } from '../../src/eval/image.js';
import { taskOf } from '../../src/eval/runInstance.js';
import { renderTaskMessage } from '../../src/leaf/prompt.js';
import { ROOT, runFrognano, tempDir } from './helpers.js';

// The parts of `frognano eval` that need no Docker: datasets, selection, image names, the first message, grading a
// recorded harness report, and the errors of a grade that cannot run the harness.

const SHA = 'a'.repeat(40);
const row = (id: string, repo = 'o/r', extra: Record<string, unknown> = {}) => ({
  instance_id: id,
  repo,
  base_commit: SHA,
  problem_statement: `Problem of ${id}\nDetails.\n`,
  FAIL_TO_PASS: '["t::a"]',
  ...extra,
});

let work: string;
beforeAll(async () => {
  work = await tempDir('eval-data');
});
afterAll(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

describe('eval datasets', () => {
  test('reads JSONL, a JSON array and Parquet alike, keeping the fields eval does not use', async () => {
    const rows = [row('o__r-1'), row('o__r-2', 'o/s')];
    await fs.writeFile(path.join(work, 'd.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    await fs.writeFile(path.join(work, 'd.json'), JSON.stringify(rows));
    const columns = Object.keys(rows[0]).map((name) => ({
      name,
      data: rows.map((r) => (r as Record<string, unknown>)[name]),
      type: 'STRING' as const,
    }));
    await fs.writeFile(path.join(work, 'd.parquet'), Buffer.from(parquetWriteBuffer({ columnData: columns })));
    for (const f of ['d.jsonl', 'd.json', 'd.parquet']) {
      const got = await loadDataset(path.join(work, f));
      expect(got.map((i) => i.instance_id)).toEqual(['o__r-1', 'o__r-2']);
      expect(got[1].repo).toBe('o/s');
      expect(got[0].FAIL_TO_PASS).toBe('["t::a"]');
    }
  });

  test('a bad instance names its row and field; a duplicate id is refused', async () => {
    await fs.writeFile(
      path.join(work, 'bad.jsonl'),
      `${JSON.stringify(row('x-1'))}\n${JSON.stringify(row('../up'))}\n`,
    );
    await expect(loadDataset(path.join(work, 'bad.jsonl'))).rejects.toThrow(/instance 2: instance_id/);
    const short = { ...row('x-2'), base_commit: 'abc' };
    await fs.writeFile(path.join(work, 'short.jsonl'), JSON.stringify(short));
    await expect(loadDataset(path.join(work, 'short.jsonl'))).rejects.toThrow(/base_commit/);
    await fs.writeFile(path.join(work, 'dup.jsonl'), `${JSON.stringify(row('x-1'))}\n${JSON.stringify(row('x-1'))}\n`);
    await expect(loadDataset(path.join(work, 'dup.jsonl'))).rejects.toThrow(/x-1 appears twice/);
    await expect(loadDataset(path.join(work, 'nope.csv'))).rejects.toThrow(/does not exist/);
  });

  test('--instances, then --shuffle with a seed, then --limit; an unknown id is an error', () => {
    const all = Array.from({ length: 20 }, (_, i) => ({ ...row(`o__r-${i}`) }));
    expect(selectInstances(all, { ids: ['o__r-3', 'o__r-1'] }).map((i) => i.instance_id)).toEqual(['o__r-3', 'o__r-1']);
    const a = selectInstances(all, { shuffleSeed: 42, limit: 5 }).map((i) => i.instance_id);
    expect(a).toHaveLength(5);
    expect(selectInstances(all, { shuffleSeed: 42, limit: 5 }).map((i) => i.instance_id)).toEqual(a);
    expect(a).not.toEqual(all.slice(0, 5).map((i) => i.instance_id));
    expect(
      seededShuffle(all, 7)
        .map((i) => i.instance_id)
        .sort(),
    ).toEqual(all.map((i) => i.instance_id).sort());
    expect(() => selectInstances(all, { ids: ['o__r-1', 'nope-9'] })).toThrow(/not in the dataset: nope-9/);
  });
});

describe('eval instances', () => {
  test("SWE-bench's image naming: __ as _1776_, lower case; a template without {id} is refused", () => {
    expect(imageFor('swebench/sweb.eval.x86_64.{id}:latest', 'django__django-11099')).toBe(
      'swebench/sweb.eval.x86_64.django_1776_django-11099:latest',
    );
    expect(imageFor('reg.io/x.{id}:v1', 'Sphinx-Doc__sphinx-8595')).toBe('reg.io/x.sphinx-doc_1776_sphinx-8595:v1');
    expect(() => imageFor('swebench/fixed:latest', 'a__b-1')).toThrow(/\{id\}/);
    expect(() => imageFor('bad name {id}', 'a__b-1')).toThrow(/not a Docker image name/);
  });

  test('the first user message is the bare problem statement', () => {
    const statement = 'Title line\n\n  indented body\nmore\n';
    const task = taskOf({ instance_id: 'a__b-1', repo: 'a/b', base_commit: SHA, problem_statement: statement });
    expect(renderTaskMessage(task)).toBe('Title line\n\n  indented body\nmore\n');
  });
});

describe('frognano eval grade', () => {
  let out: string;
  beforeAll(async () => {
    out = path.join(work, 'graded');
    await fs.mkdir(out, { recursive: true });
    const ds = [
      row('fixture__calc-1', 'fixture/calc'),
      row('fixture__strings-2', 'fixture/strings'),
      row('fixture__calc-3', 'fixture/calc'),
    ];
    await fs.writeFile(path.join(out, 'eval-dataset.json'), JSON.stringify(ds));
    const preds = ds.map((d, i) => ({
      instance_id: d.instance_id,
      model_name_or_path: 'org/frognano-4b',
      model_patch: i === 2 ? '' : 'diff --git a/x b/x\n',
    }));
    await fs.writeFile(path.join(out, 'predictions.jsonl'), preds.map((p) => JSON.stringify(p)).join('\n') + '\n');
    await fs.writeFile(
      path.join(out, 'eval-summary.json'),
      JSON.stringify({ model: 'org/frognano-4b', totals: { instances: 3 } }),
    );
  });

  test('reads a recorded harness report: resolved X of Y beside the model card, per repository, into the summary', async () => {
    const report = path.join(ROOT, 'test/fixtures/eval/report.json');
    const run = await runFrognano(['eval', 'grade', out, '--report', report]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('resolved 2 of 3 (66.7%)');
    expect(run.stdout).toContain('model card: 61.5%');
    expect(run.stdout).toMatch(/fixture\/calc\s+1 of 2/);
    expect(run.stdout).toMatch(/fixture\/strings\s+1 of 1/);
    expect(run.stdout).toContain('empty patch 1');
    const summary = JSON.parse(await fs.readFile(path.join(out, 'eval-summary.json'), 'utf8'));
    expect(summary.totals).toEqual({ instances: 3 });
    expect(summary.grade).toMatchObject({
      resolved: 2,
      total: 3,
      percent: 66.7,
      model_card_percent: 61.5,
      by_repo: { 'fixture/calc': { resolved: 1, total: 2 }, 'fixture/strings': { resolved: 1, total: 1 } },
      resolved_ids: ['fixture__calc-1', 'fixture__strings-2'],
    });
  });

  test('a file that is not a run report says what it lacks (exit 3)', async () => {
    const bad = path.join(work, 'not-a-report.json');
    await fs.writeFile(bad, JSON.stringify({ total_instances: 3, resolved_ids: [] }));
    const run = await runFrognano(['eval', 'grade', out, '--report', bad]);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/is not a SWE-bench run report: .*resolved_instances/);
  });

  test('a Python without swebench is a setup error that says how to install it (exit 3)', async () => {
    const run = await runFrognano(['eval', 'grade', out, '--python', 'python3']);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('swebench is not installed for python3');
    expect(run.stderr).toContain('pip install swebench==4.1.0');
  });

  test('an output directory without predictions cannot be graded', async () => {
    const run = await runFrognano(['eval', 'grade', path.join(work, 'empty-out')]);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/no predictions in/);
  });
});

describe('frognano eval usage', () => {
  test('--sandbox other than docker, a missing --dataset, a template without {id}: usage errors', async () => {
    const common = ['--replay', path.join(work, 'x.json')];
    for (const [args, msg] of [
      [['--dataset', 'd.jsonl', '--out', 'o', '--sandbox', 'bwrap'], /only be docker|cannot/],
      [['--out', 'o'], /needs --dataset/],
      [['--dataset', 'd.jsonl', '--out', 'o', '--image-template', 'x:y'], /\{id\}/],
      [['--dataset', 'd.jsonl', '--out', 'o', '--workers', '0'], /--workers/],
      // With --queue the runners' model and limits run the instances: the local ones are refused, not ignored.
      [['--dataset', 'd.jsonl', '--out', 'o', '--queue', '--workers', '2'], /with --queue .*drop --workers, --replay/],
      [['--dataset', 'd.jsonl', '--out', 'o', '--tenant', 'nightly'], /--tenant goes with --queue/],
    ] as const) {
      const run = await runFrognano(['eval', ...args, ...common]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(msg);
    }
  });
});
