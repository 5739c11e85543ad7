/**
 * One Leaf tool call through the in-sandbox runner (ToolExecutor -> Sandbox.spawn -> python3 sandboxTool.py),
 * side by side with a bare command in the same sandbox: Read of a 200-line file, Edit, Glob over 1,000 files.
 *   npx tsx bench/leaf-tools.ts [docker|bwrap] [runs]     (docker uses FROGNANO_TEST_SANDBOX_IMAGE or frognano-sandbox:test)
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ToolExecutor } from '../src/leaf/tools.js';
import { BwrapSandbox } from '../src/sandbox/bwrap.js';
import { DockerSandbox } from '../src/sandbox/docker.js';
import type { Sandbox } from '../src/sandbox/types.js';
import { summarize } from './lib.js';

const kind = process.argv[2] ?? 'docker';
const runs = Number(process.argv[3] ?? 30);
const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-bench-tools-'));
await mkdir(path.join(dir, 'src'));
await writeFile(path.join(dir, 'big.py'), Array.from({ length: 200 }, (_, i) => `x${i} = ${i}\n`).join(''));
for (let i = 0; i < 1000; i++) await writeFile(path.join(dir, 'src', `f${i}.py`), `v = ${i}\n`);

const sandbox: Sandbox =
  kind === 'bwrap' ? await BwrapSandbox.create(dir) : await DockerSandbox.create(dir, { image: process.env.FROGNANO_TEST_SANDBOX_IMAGE ?? 'frognano-sandbox:test' });
const tools = new ToolExecutor(sandbox);

async function time(label: string, op: (i: number) => Promise<unknown>): Promise<number> {
  await op(-1); // warm
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await op(i);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const s = summarize(ms);
  console.log(`${label.padEnd(34)} median ${s.median.toFixed(1).padStart(7)} ms   p90 ${s.p90.toFixed(1).padStart(7)} ms`);
  return s.median;
}

try {
  console.log(`${kind} sandbox, ${runs} runs each`);
  const bare = await time(`bare command (true)`, () => sandbox.spawn(['true']));
  const read = await time('Read (200 lines)', () => tools.execute({ name: 'Read', arguments: { file_path: 'big.py' } }));
  const edit = await time('Edit (one replacement)', (i) =>
    tools.execute({ name: 'Edit', arguments: { file_path: 'big.py', old_string: `x${i + 1} = `, new_string: `x${i + 1} =  ` } }),
  );
  const glob = await time('Glob **/*.py (1,000 files)', () => tools.execute({ name: 'Glob', arguments: { pattern: '**/*.py' } }));
  for (const [name, m] of [['Read', read], ['Edit', edit], ['Glob', glob]] as const) console.log(`${name}: ${(m / bare).toFixed(2)}x the bare command`);
} finally {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
}
