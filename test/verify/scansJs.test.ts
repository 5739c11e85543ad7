/**
 * The ESLint half of the verification scans (src/verify/scans/eslint.mjs, run by scanner.py) on real bwrap and docker
 * sandboxes: only what the patch adds, on exactly its lines, and nothing the repository says can silence it.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { DockerSandbox } from '../../src/sandbox/docker/index.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { scanChange, type ScanChangeOptions } from '../../src/verify/scans/index.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';
import { buildDerivedImage } from '../support/derivedImage.js';

const docker = await dockerForTests();
const RUN_LABEL = { 'dev.frognano.test': `scanjs-test-${randomUUID()}` };

const BASE_LIB = [
  "'use strict';",
  "const cp = require('child_process');",
  '',
  'function old(x) {',
  '  return eval(x);',
  '}',
  '',
  'module.exports = { old };',
  '',
];
const NEW_LIB = [
  '/* eslint-disable */',
  "'use strict';",
  "const cp = require('child_process');",
  '',
  'function run(cmd) {',
  '  return cp.exec(cmd);', // 6
  '}',
  '',
  'function list() {',
  "  return cp.exec('ls');", // 10: a literal command, clean
  '}',
  '',
  'function old(x) {',
  '  return eval(x);', // 14: moved, not new
  '}',
  '',
  'function calc(expr) {',
  '  return eval(expr); // eslint-disable-line', // 18
  '}',
  '',
  'module.exports = { old, run, list, calc };',
  '',
];
const NEW_TS = [
  'export function make(body: string): Function {',
  "  return new Function('a', body);", // 2
  '}',
  'export const double = (n: number): number => n * 2;',
  '',
];
// The repository's own ESLint configuration, turning every rule the scan runs off: it must change nothing.
const HOSTILE_CONFIG = [
  'export default [{ rules: { "no-eval": "off", "no-new-func": "off" }, linterOptions: { noInlineConfig: false } }];',
  '',
];

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' });

function makeRepo(files: Record<string, string[]>): { repoDir: string; baseCommit: string; patch: string } {
  const repoDir = mkdtempSync(path.join(os.tmpdir(), 'fn-scanjs-repo-'));
  git(repoDir, 'init', '-q');
  writeFileSync(path.join(repoDir, 'lib.js'), BASE_LIB.join('\n'));
  git(repoDir, 'add', '-A');
  git(repoDir, 'commit', '-qm', 'base');
  const baseCommit = git(repoDir, 'rev-parse', 'HEAD').trim();
  for (const [name, lines] of Object.entries(files)) writeFileSync(path.join(repoDir, name), lines.join('\n'));
  git(repoDir, 'add', '-A');
  const patch = git(repoDir, 'diff', '--binary', '--cached', 'HEAD');
  return { repoDir, baseCommit, patch };
}

type Factory = (ws: string) => Promise<Sandbox>;
const dockerFactory =
  (image: string): Factory =>
  (ws) =>
    DockerSandbox.create(ws, { image, cpus: 1, labels: RUN_LABEL }, { docker });
const sides: [string, Factory | undefined][] = [
  ['bwrap', (ws) => BwrapSandbox.create(ws)],
  ['docker', docker ? dockerFactory(TEST_IMAGE) : undefined],
];

const where = (r: { findings: { tool: string; rule: string; file: string; line: number }[] }) =>
  r.findings.map((f) => `${f.tool} ${f.rule} ${f.file}:${f.line}`).sort();

describe.each(sides)('the ESLint scan on %s', (_name, factory) => {
  const maybe = factory ? it : it.skip;
  const opts = (repo: ReturnType<typeof makeRepo>): ScanChangeOptions => ({
    ...repo,
    sandboxFactory: factory!,
    security: true,
    secrets: true,
    timeoutMs: 120_000,
  });

  maybe(
    'names eval, exec of a variable and new Function on exactly their added lines; config and comments silence nothing',
    async () => {
      const repo = makeRepo({ 'lib.js': NEW_LIB, 'util.ts': NEW_TS, 'eslint.config.js': HOSTILE_CONFIG });
      try {
        const r = await scanChange(opts(repo));
        expect(r.scans).toEqual([
          { tool: 'bandit', ran: true, files: 0 },
          { tool: 'eslint', ran: true, files: 3 },
          { tool: 'secrets', ran: true, files: 3 },
        ]);
        expect(where(r)).toEqual([
          'eslint no-eval lib.js:18',
          'eslint no-new-func util.ts:2',
          'eslint security/detect-child-process lib.js:6',
          'eslint security/detect-eval-with-expression lib.js:18',
        ]);
        expect(r.findings.find((f) => f.rule === 'no-eval')).toMatchObject({ kind: 'security', severity: 'high' });
      } finally {
        rmSync(repo.repoDir, { recursive: true, force: true });
      }
    },
    180_000,
  );

  maybe(
    'a patched file that does not parse is a scan not run, with the file and the reason',
    async () => {
      const repo = makeRepo({ 'lib.js': [...NEW_LIB.slice(0, 6), '  return cp.exec(cmd;', '}', ''] });
      try {
        const r = await scanChange(opts(repo));
        const eslint = r.scans.find((s) => s.tool === 'eslint');
        expect(eslint).toMatchObject({ ran: false });
        expect(eslint!.reason).toMatch(/^eslint could not parse 1 of the patch's files \(lib\.js, line 7: /);
      } finally {
        rmSync(repo.repoDir, { recursive: true, force: true });
      }
    },
    180_000,
  );
});

const itDocker = docker ? it : it.skip;
describe('the ESLint scan in an image without the bundle', () => {
  const image = `fn-scanjs-test-nobundle:${randomUUID().slice(0, 8)}`;
  afterAll(() => {
    if (docker) execFileSync('docker', ['rmi', '-f', image], { stdio: 'ignore' });
  });

  itDocker(
    'reports eslint as not run with the reason, and still runs the other scans',
    async () => {
      buildDerivedImage(TEST_IMAGE, image, 'rm -rf /opt/frognano/scanners');
      const repo = makeRepo({ 'lib.js': NEW_LIB });
      try {
        const r = await scanChange({
          ...repo,
          sandboxFactory: dockerFactory(image),
          security: true,
          secrets: true,
          timeoutMs: 120_000,
        });
        expect(r.scans).toEqual([
          { tool: 'bandit', ran: true, files: 0 },
          {
            tool: 'eslint',
            ran: false,
            reason: 'the eslint bundle is not installed in the sandbox (/opt/frognano/scanners/eslint)',
          },
          { tool: 'secrets', ran: true, files: 1 },
        ]);
        expect(r.findings).toEqual([]);
      } finally {
        rmSync(repo.repoDir, { recursive: true, force: true });
      }
    },
    180_000,
  );
});
