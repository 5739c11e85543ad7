import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ToolExecutor } from '../../src/leaf/tools.js';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { DockerSandbox } from '../../src/sandbox/docker/index.js';
import { LocalSandbox } from '../../src/sandbox/local.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';
import { CASES, type ToolCase } from './conformance/cases.js';
import { forWorkdir, runCase, type GoldenFile } from './conformance/harness.js';
import { isolateHome, removeDir, tempDir } from './helpers.js';

/**
 * Upstream conformance: every case of conformance/cases.ts, run through the project's tool path (ToolExecutor ->
 * Sandbox.spawn -> the in-sandbox tool script), must give byte for byte the observation and the file contents
 * that upstream Leaf's own tool_runner.py gave when the goldens were recorded (conformance/record.ts).
 */
const golden = JSON.parse(
  readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'conformance', 'goldens.json'), 'utf8'),
) as GoldenFile;

isolateHome();

it('has a golden for every case, and at least 50', () => {
  expect(Object.keys(golden.cases).sort()).toEqual(CASES.map((c) => c.name).sort());
  expect(CASES.length).toBeGreaterThanOrEqual(50);
  expect(golden.workdir).toBe('/workspace');
});

function describeConformance(kind: string, open: (dir: string) => Promise<Sandbox>, skip: (c: ToolCase) => boolean = () => false): void {
  describe(`upstream tool conformance on the ${kind} sandbox`, () => {
    let dir: string;
    let sandbox: Sandbox;
    beforeAll(async () => {
      dir = await tempDir('fn-leaf-conf-');
      sandbox = await open(dir);
    });
    afterAll(async () => {
      await sandbox?.close();
      await removeDir(dir);
    });
    it.each(CASES.filter((c) => !skip(c)).map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      const got = await runCase(sandbox, c, async (tool, args, env) =>
        (await new ToolExecutor(sandbox, { runnerEnv: env }).execute({ name: tool, arguments: args })).output,
      );
      expect(got).toEqual(forWorkdir(golden.cases[c.name], sandbox.workdir));
    });
  });
}

describeConformance('bwrap', (dir) => BwrapSandbox.create(dir));

// The local sandbox is the host: cases that write outside the workspace would write the host's /tmp, and one
// names the workspace directory by its bwrap/docker name.
const HOST_ONLY_SKIPS = new Set(['write_absolute_outside', 'write_dangling_symlink', 'glob_dotdot']);
describeConformance('local', async (dir) => new LocalSandbox(dir), (c) => HOST_ONLY_SKIPS.has(c.name));

const docker = await dockerForTests();
if (docker) {
  describeConformance('docker', (dir) => DockerSandbox.create(dir, { image: TEST_IMAGE, cpus: 1 }, { docker }));
}
