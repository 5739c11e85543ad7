/**
 * Records the golden outputs of test/leaf/conformance.test.ts by running upstream Leaf's own tool runner
 * (microsoft/FrogNano, frognano/harness/leaf/tool_runner.py; not part of this repository) on every case, inside
 * a bwrap sandbox whose workspace is /workspace, the way upstream's environment.py drives it: one JSON request
 * {tool, args, workdir} per call, the observation on stdout.
 *
 *   npx tsx test/leaf/conformance/record.ts /path/to/upstream/tool_runner.py
 *
 * Run it as root or as a user that can use bubblewrap; it rewrites test/leaf/conformance/goldens.json.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BwrapSandbox } from '../../../src/sandbox/bwrap.js';
import { CASES } from './cases.js';
import { runCase, type GoldenFile } from './harness.js';

async function main(): Promise<void> {
  const runnerPath = process.argv[2];
  if (!runnerPath) throw new Error('usage: record.ts <upstream tool_runner.py>');
  const runner = await readFile(runnerPath, 'utf8');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-leaf-record-'));
  const sandbox = await BwrapSandbox.create(dir);
  const golden: GoldenFile = {
    recordedWith: `upstream tool_runner.py sha256 ${createHash('sha256').update(runner).digest('hex')}, bwrap sandbox`,
    workdir: sandbox.workdir,
    cases: {},
  };
  try {
    for (const c of CASES) {
      golden.cases[c.name] = await runCase(sandbox, c, async (tool, args, env) => {
        const r = await sandbox.spawn(['python3', '-c', runner], {
          stdin: JSON.stringify({ tool, args, workdir: sandbox.workdir }),
          env,
          timeoutMs: 60_000,
        });
        if (r.exitCode !== 0) throw new Error(`upstream runner exited ${r.exitCode} on ${c.name}: ${r.stderr}`);
        return r.stdout + r.stderr;
      });
      process.stdout.write('.');
    }
  } finally {
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  }
  const out = path.join(path.dirname(fileURLToPath(import.meta.url)), 'goldens.json');
  await writeFile(out, `${JSON.stringify(golden, null, 2)}\n`);
  console.log(`\n${CASES.length} cases written to ${out}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
