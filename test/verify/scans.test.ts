import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { DockerSandbox } from '../../src/sandbox/docker/index.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { redact } from '../../src/util/redact.js';
import { scanChange, SCAN_LIMITS, type ScanChangeOptions } from '../../src/verify/scans/index.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';
import { buildDerivedImage } from '../support/derivedImage.js';

const docker = await dockerForTests();
const RUN_LABEL = { 'dev.frognano.test': `scan-test-${randomUUID()}` };

// Key-shaped values are built at run time, so no committed file holds one (GitHub push protection).
const alnum = (n: number) =>
  Array.from(randomBytes(n), (b) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'[b % 62]).join('');
const AWS_ID = 'AK' + 'IA' + alnum(16).toUpperCase();
const AWS_SECRET = alnum(40);
const GH_TOKEN = 'gh' + 'p_' + alnum(36);

const BASE_APP = [
  'import os',
  'import subprocess',
  '',
  '',
  'def old(x):',
  '    os.system("ls " + x)',
  '',
  '',
  'def keep():',
  '    return 1',
  '',
];
// The patch moves old() below keep() (its os.system line is added again, but is not new), adds a shell=True call
// and an eval, and clean lines around them.
const NEW_APP = [
  'import ast',
  'import os',
  'import subprocess',
  '',
  '',
  'def keep():',
  '    return 1',
  '',
  '',
  'def run(cmd):',
  '    subprocess.call(cmd, shell=True)', // 11
  '    return ast.literal_eval("1")',
  '',
  '',
  'def calc(expr):',
  '    return eval(expr)', // 16
  '',
  '',
  'def old(x):',
  '    os.system("ls " + x)', // 20: moved, not new
  '',
];
const CONFIG = [
  `aws_access_key_id = "${AWS_ID}"`, // 1
  `aws_secret_access_key = "${AWS_SECRET}"`, // 2
  `GITHUB_TOKEN = "${GH_TOKEN}"`, // 3
  'region = "eu-west-1"',
  'password = "changeme-changeme-changeme"',
  '',
];

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' });

/** A repository at a base commit, its working tree left holding the patch (the scan must not use it), and the patch. */
function makeRepo(): { repoDir: string; baseCommit: string; patch: string } {
  const repoDir = mkdtempSync(path.join(os.tmpdir(), 'fn-scan-repo-'));
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: repoDir, encoding: 'utf8' });
  git('init', '-q');
  writeFileSync(path.join(repoDir, 'app.py'), BASE_APP.join('\n'));
  writeFileSync(path.join(repoDir, 'README.md'), 'hello\n');
  git('add', '-A');
  git('commit', '-qm', 'base');
  const baseCommit = git('rev-parse', 'HEAD').trim();
  writeFileSync(path.join(repoDir, 'app.py'), NEW_APP.join('\n'));
  writeFileSync(path.join(repoDir, 'config.py'), CONFIG.join('\n'));
  git('add', '-A');
  const patch = git('diff', '--binary', '--cached', 'HEAD');
  return { repoDir, baseCommit, patch };
}

type Factory = (ws: string) => Promise<Sandbox>;
const bwrapFactory: Factory = (ws) => BwrapSandbox.create(ws);
const dockerFactory =
  (image: string): Factory =>
  (ws) =>
    DockerSandbox.create(ws, { image, cpus: 1, labels: RUN_LABEL }, { docker });

const sides: [string, Factory | undefined][] = [
  ['bwrap', bwrapFactory],
  ['docker', docker ? dockerFactory(TEST_IMAGE) : undefined],
];

describe.each(sides)('scanChange on %s', (_name, factory) => {
  const maybe = factory ? it : it.skip;
  let repo: ReturnType<typeof makeRepo>;
  beforeAll(() => {
    repo = makeRepo();
  });
  afterAll(() => rmSync(repo.repoDir, { recursive: true, force: true }));
  const opts = (o: Partial<ScanChangeOptions> = {}): ScanChangeOptions => ({
    ...repo,
    sandboxFactory: factory!,
    security: true,
    secrets: true,
    timeoutMs: 120_000,
    ...o,
  });

  maybe(
    'finds shell=True, eval and the cloud keys on exactly their added lines, masked',
    async () => {
      const r = await scanChange(opts());
      expect(r.scans).toEqual([
        { tool: 'bandit', ran: true, files: 2 },
        { tool: 'eslint', ran: true, files: 0 },
        { tool: 'secrets', ran: true, files: 2 },
      ]);
      const where = r.findings.map((f) => `${f.tool} ${f.rule} ${f.file}:${f.line}`).sort();
      expect(where).toEqual([
        'bandit B307 app.py:16',
        'bandit B602 app.py:11',
        'secrets aws-access-key-id config.py:1',
        'secrets aws-secret-access-key config.py:2',
        'secrets github-token config.py:3',
      ]);
      expect(r.findings.find((f) => f.rule === 'B602')).toMatchObject({ kind: 'security', severity: 'high' });
      expect(r.findings.find((f) => f.rule === 'aws-access-key-id')?.message).toBe(
        'AWS access key id: AKIA******** (20 characters)',
      );
      const all = JSON.stringify(r);
      for (const secret of [AWS_ID, AWS_ID.slice(4), AWS_SECRET, AWS_SECRET.slice(0, 12), GH_TOKEN, GH_TOKEN.slice(4)])
        expect(all).not.toContain(secret);
      // What is reported passes redaction unchanged (nothing in it for redact() to find).
      expect(redact(all)).toBe(all);
    },
    180_000,
  );

  maybe(
    'says why a scan did not run: a bandit timeout, a patch that does not apply, a scan switched off',
    async () => {
      const slow = await scanChange(opts({ secrets: false }), { ...SCAN_LIMITS, toolTimeoutMs: 30 });
      expect(slow.findings).toEqual([]);
      expect(slow.scans).toEqual([
        { tool: 'bandit', ran: false, reason: 'timed out after 0.03 s' },
        { tool: 'eslint', ran: true, files: 0 },
        { tool: 'secrets', ran: false, reason: 'disabled (verify.secrets is off)' },
      ]);
      const bad = await scanChange(
        opts({ patch: repo.patch.replace('-    os.system("ls " + x)', '-    os.system("rm " + x)') }),
      );
      expect(bad.scans.map((s) => s.reason)).toEqual([
        'the patch does not apply to the base commit',
        'the patch does not apply to the base commit',
        'the patch does not apply to the base commit',
      ]);
      const whole = await scanChange(opts({ timeoutMs: 1 }));
      expect(whole.scans.every((s) => !s.ran && /^timed out after|could not be prepared/.test(s.reason!))).toBe(true);
    },
    180_000,
  );
});

describe('the secrets rules', () => {
  const u = (n: number) => alnum(n).toUpperCase();
  const KEYS: [string, string][] = [
    ['github-fine-grained-token', `token: ${'github' + '_pat_' + alnum(22) + '_' + alnum(59)}`],
    ['gitlab-token', `GITLAB = '${'glp' + 'at-' + alnum(20)}'`],
    ['slack-token', `slack ${'xo' + 'xb-' + '1234567890-' + alnum(24)}`],
    ['slack-webhook', `hook=${'https://hooks.slack' + '.com/services/T' + u(8) + '/B' + u(8) + '/' + alnum(24)}`],
    ['stripe-key', `stripe.api = "${'s' + 'k_live_' + alnum(24)}"`],
    ['google-api-key', `maps: ${'AI' + 'za' + alnum(35)}`],
    ['private-key', '-----BEGIN ' + 'RSA PRIVATE KEY-----'],
    ['jwt', `auth ${'ey' + 'J' + alnum(20) + '.ey' + 'J' + alnum(20) + '.' + alnum(20)}`],
    ['high-entropy-secret', `db_password = "${alnum(24)}"`],
  ];
  const CLEAN = [
    'api_key = os.environ["API_KEY"]',
    `token = "${'x'.repeat(24)}"`,
    'password = "changeme-changeme-changeme"',
    'secret_name = "aaaaaaaaaaaaaaaaaaaaaaaa"',
    'description = "a perfectly ordinary sentence"',
  ];
  const maybe = it;

  maybe(
    'flag every well-known format on its line, masked, and leave placeholders and clean lines alone',
    async () => {
      const repoDir = mkdtempSync(path.join(os.tmpdir(), 'fn-scan-keys-'));
      const git = (...args: string[]) =>
        execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: repoDir, encoding: 'utf8' });
      try {
        git('init', '-q');
        writeFileSync(path.join(repoDir, 'README.md'), 'x\n');
        git('add', '-A');
        git('commit', '-qm', 'base');
        const baseCommit = git('rev-parse', 'HEAD').trim();
        const lines = KEYS.flatMap(([, line]) => [line, CLEAN.shift() ?? 'ok = 1']);
        writeFileSync(path.join(repoDir, 'settings.txt'), lines.join('\n') + '\n');
        git('add', '-A');
        const patch = git('diff', '--binary', '--cached', 'HEAD');
        const r = await scanChange({
          repoDir,
          baseCommit,
          patch,
          sandboxFactory: bwrapFactory,
          security: false,
          secrets: true,
          timeoutMs: 60_000,
        });
        expect(r.scans).toEqual([
          { tool: 'secrets', ran: true, files: 1 },
          { tool: 'bandit', ran: false, reason: 'disabled (verify.security is off)' },
          { tool: 'eslint', ran: false, reason: 'disabled (verify.security is off)' },
        ]);
        expect(r.findings.map((f) => `${f.rule}:${f.line}`)).toEqual(KEYS.map(([rule], i) => `${rule}:${2 * i + 1}`));
        const all = JSON.stringify(r);
        for (const [, line] of KEYS.slice(0, -1)) {
          const value = /([A-Za-z0-9_./:-]{20,})/.exec(line.replace('-----BEGIN ', ''))?.[1];
          if (value) expect(all).not.toContain(value.slice(-16));
        }
        expect(redact(all)).toBe(all);
      } finally {
        rmSync(repoDir, { recursive: true, force: true });
      }
    },
    120_000,
  );
});

const itDocker = docker ? it : it.skip;
describe('scanChange in an image without bandit', () => {
  const image = `fn-scan-test-nobandit:${randomUUID().slice(0, 8)}`;
  afterAll(() => {
    if (docker) execFileSync('docker', ['rmi', '-f', image], { stdio: 'ignore' });
  });

  itDocker(
    'reports bandit as not run with the reason, and still scans for secrets',
    async () => {
      buildDerivedImage(TEST_IMAGE, image, 'rm -f /usr/bin/bandit');
      const repo = makeRepo();
      try {
        const r = await scanChange({
          ...repo,
          sandboxFactory: dockerFactory(image),
          security: true,
          secrets: true,
          timeoutMs: 120_000,
        });
        expect(r.scans).toEqual([
          { tool: 'bandit', ran: false, reason: 'bandit is not installed in the sandbox image' },
          { tool: 'eslint', ran: true, files: 0 },
          { tool: 'secrets', ran: true, files: 2 },
        ]);
        expect(r.findings.map((f) => f.rule).sort()).toEqual([
          'aws-access-key-id',
          'aws-secret-access-key',
          'github-token',
        ]);
        // A patch without a Python file needs no bandit: "not installed" would be a scan missing for nothing.
        git(repo.repoDir, 'reset', '-q', '--hard', repo.baseCommit);
        writeFileSync(path.join(repo.repoDir, 'README.md'), 'hello\nworld\n');
        const docs = await scanChange({
          ...repo,
          patch: git(repo.repoDir, 'diff', '--binary', 'HEAD'),
          sandboxFactory: dockerFactory(image),
          security: true,
          secrets: true,
          timeoutMs: 120_000,
        });
        expect(docs.scans).toEqual([
          { tool: 'bandit', ran: true, files: 0 },
          { tool: 'eslint', ran: true, files: 0 },
          { tool: 'secrets', ran: true, files: 1 },
        ]);
      } finally {
        rmSync(repo.repoDir, { recursive: true, force: true });
      }
    },
    180_000,
  );
});
