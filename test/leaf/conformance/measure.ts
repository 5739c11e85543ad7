/**
 * Prints how many golden cases the project's ToolExecutor matches byte for byte (output and files), on a bwrap
 * sandbox: `npx tsx test/leaf/conformance/measure.ts`. The jest test asserts all of them; this counts, for reports.
 */
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ToolExecutor } from '../../../src/leaf/tools.js';
import { BwrapSandbox } from '../../../src/sandbox/bwrap.js';
import { CASES } from './cases.js';
import { runCase, type GoldenFile } from './harness.js';

async function main(): Promise<void> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const golden = JSON.parse(await readFile(path.join(here, 'goldens.json'), 'utf8')) as GoldenFile;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-leaf-measure-'));
  const sandbox = await BwrapSandbox.create(dir);
  let matched = 0;
  try {
    for (const c of CASES) {
      const got = await runCase(sandbox, c, async (tool, args, env) => {
        const ex = new ToolExecutor(sandbox, { runnerEnv: env } as never);
        try {
          return (await ex.execute({ name: tool, arguments: args })).output;
        } catch (err) {
          return `THROWN ${(err as Error).message}`;
        }
      });
      const want = golden.cases[c.name];
      const ok = JSON.stringify(got) === JSON.stringify(want);
      if (ok) matched++;
      else console.log(`DIFF ${c.name}\n  want ${JSON.stringify(want)}\n  got  ${JSON.stringify(got)}`);
    }
  } finally {
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  }
  console.log(`${matched}/${CASES.length} golden cases match`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
