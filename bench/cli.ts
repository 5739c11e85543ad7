/**
 * What the `frognano` command costs around the model: start-up of bin/frognano.js (from source through tsx,
 * and from dist/ when built), and a whole `solve` with the replay backend in the bwrap sandbox (copy,
 * sandbox, 3 turns, patch, trajectory files) on a temporary git repository.
 *   npx tsx bench/cli.ts [runs]
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { commitAll, summarize } from './lib.js';

const runs = Number(process.argv[2] ?? 5);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'bin', 'frognano.js');

function time(args: string[], env: NodeJS.ProcessEnv = process.env): number[] {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const r = spawnSync(process.execPath, [bin, ...args], { env, encoding: 'utf8' });
    ms.push(performance.now() - t);
    if (r.status !== 0) throw new Error(`frognano ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  }
  return ms;
}

function report(label: string, ms: number[]): void {
  const { median, min } = summarize(ms);
  console.log(
    `${label.padEnd(44)} median ${median.toFixed(0).padStart(5)} ms   min ${min.toFixed(0).padStart(5)} ms   (${runs} runs)`,
  );
}

const work = await mkdtemp(path.join(os.tmpdir(), 'fn-bench-cli-'));
try {
  report('frognano --version (tsx, from source)', time(['--version']));
  if (existsSync(path.join(root, 'dist', 'src', 'cli', 'main.js'))) {
    report('frognano --version (dist/)', time(['--version'], { ...process.env, FROGNANO_USE_DIST: '1' }));
  } else console.log('frognano --version (dist/)                    skipped: run `npm run build` first');

  const repo = path.join(work, 'repo');
  await mkdir(repo);
  for (let i = 0; i < 100; i++) await writeFile(path.join(repo, `f${i}.txt`), `line\n`.repeat(100));
  await writeFile(path.join(repo, 'calc.sh'), 'add() { echo $(( $1 - $2 )); }\n');
  commitAll(repo, 'base');
  const script = path.join(work, 'turns.json');
  await writeFile(
    script,
    JSON.stringify({
      turns: [
        { content: '', tool_calls: [{ name: 'Read', arguments: { file_path: 'calc.sh' } }] },
        {
          content: '',
          tool_calls: [
            { name: 'Edit', arguments: { file_path: 'calc.sh', old_string: '$1 - $2', new_string: '$1 + $2' } },
            { name: 'Bash', arguments: { command: '. ./calc.sh && add 2 3' } },
          ],
        },
        { content: 'Fixed.' },
      ],
    }),
  );
  // The same --out each time: an explicit output directory is reused, its files overwritten.
  report(
    'solve: replay, bwrap, 3 turns, 101 files',
    time([
      'solve',
      repo,
      '--issue',
      'add() subtracts',
      '--replay',
      script,
      '--sandbox',
      'bwrap',
      '--out',
      path.join(work, 'out'),
    ]),
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
