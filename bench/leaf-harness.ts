/**
 * Harness overhead without a model: how long the Leaf loop, its tools and the trajectory renderer take
 * per turn, using the replay backend and the local sandbox on a temporary git repository.
 *   npx tsx bench/leaf-harness.ts [turns]
 */
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ReplayBackend, type ReplayTurn } from '../src/inference/replay.js';
import { runLeaf } from '../src/leaf/loop.js';
import { renderTrajectoryMarkdown, serializeTrajectory } from '../src/leaf/trajectory.js';
import { LocalSandbox } from '../src/sandbox/local.js';
import { commitAll, summarize } from './lib.js';

const turns = Number(process.argv[2] ?? 60);
const root = await mkdtemp(path.join(os.tmpdir(), 'fn-bench-'));
const home = path.join(root, 'home');
const repo = path.join(root, 'repo');
await mkdir(home);
await mkdir(path.join(repo, 'src'), { recursive: true });
process.env.HOME = home; // keep the host's login scripts out of the measurement
for (let i = 0; i < 200; i++)
  await writeFile(path.join(repo, 'src', `m${i}.ts`), `export const v${i} = ${i};\n`.repeat(50));
commitAll(repo, 'init');

const script: ReplayTurn[] = [];
for (let i = 0; i < turns; i++) {
  const f = `src/m${i % 200}.ts`;
  const kind = i % 4;
  const call =
    kind === 0
      ? { name: 'Read', arguments: { file_path: f } }
      : kind === 1
        ? {
            name: 'Edit',
            arguments: {
              file_path: f,
              old_string: `v${i % 200} = ${i % 200};`,
              new_string: `v${i % 200} = 0;`,
              replace_all: true,
            },
          }
        : kind === 2
          ? { name: 'Glob', arguments: { pattern: '**/*.ts' } }
          : { name: 'Bash', arguments: { command: 'git status --short | wc -l' } };
  script.push({ content: '', tool_calls: [call] });
}
script.push({ content: 'done' });

const started = process.hrtime.bigint();
const t = await runLeaf({
  sandbox: new LocalSandbox(repo),
  backend: ReplayBackend.fromTurns(script),
  task: { title: 'bench', body: 'bench' },
});
const loopMs = Number(process.hrtime.bigint() - started) / 1e6;
const byTool: Record<string, number[]> = {};
t.steps.forEach((s, i) =>
  s.observations.forEach((o, j) => (byTool[o.tool] ??= []).push(t.frognano.steps[i]?.observations[j]?.elapsed_ms ?? 0)),
);

let t0 = process.hrtime.bigint();
const md = renderTrajectoryMarkdown(t);
const mdMs = Number(process.hrtime.bigint() - t0) / 1e6;
t0 = process.hrtime.bigint();
const json = serializeTrajectory(t);
const jsonMs = Number(process.hrtime.bigint() - t0) / 1e6;

console.log(
  `turns: ${t.n_steps} (${t.exit_reason}), loop ${loopMs.toFixed(0)} ms, ${(loopMs / t.n_steps).toFixed(1)} ms/turn`,
);
for (const [tool, ms] of Object.entries(byTool)) {
  const { median, max } = summarize(ms);
  console.log(`  ${tool.padEnd(5)} n=${ms.length} median ${median} ms, max ${max} ms`);
}
console.log(`final context estimate: ${t.context_tokens} tokens`);
console.log(
  `markdown: ${md.length} chars in ${mdMs.toFixed(1)} ms; json: ${json.length} chars in ${jsonMs.toFixed(1)} ms`,
);
await rm(root, { recursive: true, force: true });
