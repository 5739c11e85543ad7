/**
 * verifyChange on a jest suite (issue #26 "fixture repositories (pytest, unittest, jest)"), on real bwrap and docker
 * sandboxes: test/fixtures/verify/jest is a small JavaScript project whose jest is vendored as node_modules.tgz (the
 * verification sandbox has no network), unpacked by the set-up command. Per-test results come from jest's JSON
 * report, read through the `verify.reports` globs; the ESLint scan names the eval the patch adds.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { DockerSandbox } from '../../src/sandbox/docker/index.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { verifyChange } from '../../src/verify/index.js';
import { git } from '../leaf/helpers.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/verify/jest/', import.meta.url));
const docker = await dockerForTests();
const LABEL = { 'dev.frognano.test': `hjs-${randomBytes(6).toString('hex')}` };
const LIMITS = { memoryMb: 1024, pidsLimit: 256, tmpSizeMb: 64, workspaceMb: 1024 };
type Factory = (ws: string) => Promise<Sandbox>;
const factories: [string, Factory][] = [['bwrap', (ws) => BwrapSandbox.create(ws, LIMITS)]];
if (docker)
  factories.push([
    'docker',
    (ws) => DockerSandbox.create(ws, { image: TEST_IMAGE, cpus: 1, labels: LABEL, ...LIMITS }, { docker }),
  ]);

// Fixes add (through an eval, line 3), breaks multiply.
const PATCHED_CALC = `'use strict';

const add = (a, b) => eval(\`\${Number(a)} + \${Number(b)}\`);

function multiply(a, b) {
  return a + b;
}

module.exports = { add, multiply };
`;

/** The fixture as a git repository at its base commit, and the patch (the runner's staged diff) against it. */
function fixtureRepo(): { repo: string; baseCommit: string; patch: string } {
  const repo = path.join(os.tmpdir(), `fn-verify-jest-${randomBytes(6).toString('hex')}`);
  cpSync(FIXTURE, repo, { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'base');
  const baseCommit = git(repo, 'rev-parse', 'HEAD').trim();
  writeFileSync(path.join(repo, 'calc.js'), PATCHED_CALC);
  git(repo, 'add', '-A');
  const patch = git(repo, 'diff', '--cached', '--binary', 'HEAD');
  git(repo, 'reset', '-q', '--hard', 'HEAD');
  return { repo, baseCommit, patch };
}

afterAll(async () => {
  if (!docker) return;
  for (const c of await docker.listContainers({
    all: true,
    filters: { label: [`dev.frognano.test=${LABEL['dev.frognano.test']}`] },
  }))
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
});

describe.each(factories)('verifyChange of a jest suite on %s', (_name, factory) => {
  it('names the fixed test, the regression and the eval on its line: a failure', async () => {
    const { repo, baseCommit, patch } = fixtureRepo();
    try {
      const v = await verifyChange({
        repoDir: repo,
        baseCommit,
        patch,
        setupCommands: ['tar -xzf node_modules.tgz'],
        testCommands: [
          'node node_modules/jest/bin/jest.js --ci --no-watchman --json --testLocationInResults --outputFile=jest-results.json',
        ],
        setupNetwork: false,
        reportGlobs: ['jest-results.json'],
        sandboxFactory: factory,
        environmentKey: 'test',
        security: true,
        secrets: true,
        repository: repo,
        timeoutMs: 240_000,
        setupTimeoutMs: 60_000,
        testTimeoutMs: 90_000,
      });
      expect(v.base.setup[0].exitCode).toBe(0);
      expect(v.base.tests[0].source).toBe('jest-json');
      expect(v.patched.tests[0].source).toBe('jest-json');
      expect(v.fixed.map((t) => t.id)).toEqual(['calc.test.js › calc › adds']);
      expect(v.regressions.map((t) => t.id)).toEqual(['calc.test.js › calc › multiplies']);
      expect(v.regressions[0]).toMatchObject({ file: 'calc.test.js', line: 8 });
      expect(v.scans).toEqual(
        expect.arrayContaining([
          { tool: 'eslint', ran: true, files: 1 },
          { tool: 'bandit', ran: true, files: 0 },
          { tool: 'secrets', ran: true, files: 1 },
        ]),
      );
      expect(v.findings.map((f) => `${f.tool} ${f.rule} ${f.file}:${f.line}`).sort()).toEqual([
        'eslint no-eval calc.js:3',
        'eslint security/detect-eval-with-expression calc.js:3',
      ]);
      expect(v.conclusion).toBe('failure');
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  }, 300_000);
});
