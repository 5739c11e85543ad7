/**
 * The docker sandbox's file tools against the engine's own floor: the median of a bare `docker exec true` (dockerode,
 * no wrapper) beside the median Leaf tool call through the ToolExecutor: Read of a 200-line file, Edit of it, Glob
 * over 1,000 files. The target is a file-tool call within 2x a bare exec. Samples are interleaved so that drift on a
 * shared machine hits every series alike. Prints a table; asserts nothing.
 *   npx tsx bench/sandbox-file-tools.ts [runs=40]   (FROGNANO_SANDBOX_IMAGE picks the image; default the test image)
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import Docker from 'dockerode';
import { ToolExecutor } from '../src/leaf/tools.js';
import { DockerSandbox } from '../src/sandbox/docker/index.js';
import { summarize } from './lib.js';

const runs = Number(process.argv[2] ?? 40);
const image = process.env.FROGNANO_SANDBOX_IMAGE ?? 'frognano-sandbox:test';

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/** `docker exec true` as the engine does it, with nothing of ours around it. */
async function bareExec(container: Docker.Container, user: string): Promise<void> {
  const exec = await container.exec({ Cmd: ['true'], User: user, AttachStdout: true, AttachStderr: true });
  const stream = (await exec.start({})) as Duplex;
  stream.resume();
  await new Promise<void>((res) => {
    stream.once('end', res);
    stream.once('close', res);
  });
  for (let i = 0; i < 50; i++) {
    const info = await exec.inspect();
    if (!info.Running) return;
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function main(): Promise<void> {
  const docker = new Docker();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-bench-tools-'));
  await writeFile(
    path.join(dir, 'file.py'),
    Array.from({ length: 200 }, (_, i) => `line_${i} = ${i}  # some text on line ${i}\n`).join(''),
  );
  for (let d = 0; d < 20; d++) {
    await mkdir(path.join(dir, 'src', `pkg${d}`), { recursive: true });
    for (let f = 0; f < 50; f++)
      await writeFile(path.join(dir, 'src', `pkg${d}`, `mod${f}.ts`), `export const x${f} = ${f};\n`);
  }
  const sb = await DockerSandbox.create(dir, { image }, { docker });
  try {
    const container = docker.getContainer(sb.containerId);
    const user = (await sb.exec('echo "$(id -u):$(id -g)"')).stdout.trim();
    const tools = new ToolExecutor(sb);
    const series: Record<string, number[]> = {
      'docker exec true (bare)': [],
      'sandbox.exec true': [],
      Read: [],
      Edit: [],
      Glob: [],
    };
    let flip = false;
    const calls: Record<string, () => Promise<unknown>> = {
      'docker exec true (bare)': () => bareExec(container, user),
      'sandbox.exec true': () => sb.exec('true'),
      Read: () => tools.execute({ name: 'Read', arguments: { file_path: 'file.py' } }),
      Edit: () => {
        flip = !flip;
        const [a, b] = flip ? ['line_100 = 100', 'line_100 = 101'] : ['line_100 = 101', 'line_100 = 100'];
        return tools.execute({ name: 'Edit', arguments: { file_path: 'file.py', old_string: a, new_string: b } });
      },
      Glob: () => tools.execute({ name: 'Glob', arguments: { pattern: 'src/**/*.ts' } }),
    };
    // Warm-up, and a check that the tools really did their job.
    const glob = await tools.execute({ name: 'Glob', arguments: { pattern: 'src/**/*.ts' } });
    const read = await tools.execute({ name: 'Read', arguments: { file_path: 'file.py' } });
    if (glob.isError || read.isError || !read.output.includes('200. line_199'))
      throw new Error(`tools failed: ${glob.output.slice(0, 200)} ${read.output.slice(0, 200)}`);
    await bareExec(container, user);
    for (let i = 0; i < runs; i++) {
      for (const [name, fn] of Object.entries(calls)) series[name].push(await time(fn));
    }
    const floor = summarize(series['docker exec true (bare)']).median;
    console.log(
      `docker sandbox, ${runs} interleaved runs each (ms); target: every file tool's median within 2x the bare exec`,
    );
    console.log(`${'call'.padEnd(26)}${'median'.padStart(8)}${'p90'.padStart(8)}${'x bare'.padStart(8)}`);
    for (const [name, xs] of Object.entries(series)) {
      const s = summarize(xs);
      console.log(
        `${name.padEnd(26)}${s.median.toFixed(1).padStart(8)}${s.p90.toFixed(1).padStart(8)}${(s.median / floor).toFixed(2).padStart(8)}`,
      );
    }
  } finally {
    await sb.close();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
