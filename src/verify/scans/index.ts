import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { ESLINT_BUNDLE_INSIDE } from '../../sandbox/scanners.js';
import type { Sandbox } from '../../sandbox/types.js';
import { redact } from '../../util/redact.js';
import { diffLines } from '../diffLines.js';
import type { Finding, ScanStatus } from '../types.js';

/**
 * Security and secrets scans of what a patch adds (issue #26 item 4). Everything runs in a fresh sandbox of its own
 * (never the model's, never on the host), in the bot's clean shell, without network: a clean checkout of the base
 * commit, bandit (Python) and ESLint (JavaScript/TypeScript, eslint.mjs with the bundle at ESLINT_BUNDLE_INSIDE) on
 * the base versions of the patch's files, the patch applied inside the sandbox, both again on the new versions and the
 * secrets scanner on the added lines (scanner.py). Only findings on lines the patch adds are reported, and a finding
 * whose rule, file and code line were already on the base (moved code) is not new.
 */
export interface ScanChangeOptions {
  /** A host git clone whose history holds `baseCommit` (its working tree is never used). */
  repoDir: string;
  baseCommit: string;
  /** The model-written `git diff --binary` against `baseCommit`. */
  patch: string;
  sandboxFactory: (workspaceDir: string) => Promise<Sandbox>;
  security: boolean;
  secrets: boolean;
  /** Upper bound for the whole scan (checkout, sandbox, both bandit runs, secrets). */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface ScanResult {
  findings: Finding[];
  scans: ScanStatus[];
}

/**
 * bandit 1.6.2's tests the scan runs (pinned, so an upgrade never changes what is reported). Left out: B101 (assert),
 * B105-B107 (hard-coded passwords: the secrets scanner covers them, masked), B110/B112 (try/except/pass), B311
 * (random), B322 (input, Python 2), B4xx (imports alone) and B603/B606/B607 (any subprocess call), which flag
 * ordinary code far more often than a problem.
 */
export const BANDIT_TESTS = [
  ...['B102', 'B103', 'B104', 'B108', 'B201', 'B301', 'B302', 'B303', 'B304', 'B305', 'B306', 'B307', 'B308'],
  ...['B309', 'B310', 'B312', 'B313', 'B314', 'B315', 'B316', 'B317', 'B318', 'B319', 'B320', 'B321', 'B323'],
  ...['B324', 'B325', 'B501', 'B502', 'B503', 'B504', 'B505', 'B506', 'B507', 'B601', 'B602', 'B604', 'B605'],
  ...['B608', 'B609', 'B610', 'B611', 'B701', 'B702', 'B703'],
];

/**
 * The ESLint rules the scan runs (ESLint 9.39 core and eslint-plugin-security 4.1.0, pinned in
 * runner/scanners/eslint), with the severity a finding gets. Only these: the repository's own ESLint configuration and
 * its inline `eslint-disable` comments are never read (eslint.mjs). Left out as they flag ordinary code far more often
 * than a problem: security/detect-object-injection (any `a[b]`), detect-non-literal-fs-filename (any fs call on a
 * variable), detect-non-literal-regexp and detect-possible-timing-attacks (any `===` on a name like `password`).
 */
export const ESLINT_RULES: Record<string, Finding['severity']> = {
  'no-eval': 'high',
  'no-implied-eval': 'high',
  'no-new-func': 'high',
  'security/detect-eval-with-expression': 'high',
  'security/detect-child-process': 'high',
  'security/detect-non-literal-require': 'medium',
  'security/detect-unsafe-regex': 'medium',
  'security/detect-new-buffer': 'medium',
  'security/detect-buffer-noassert': 'medium',
  'security/detect-disable-mustache-escape': 'medium',
  'security/detect-no-csrf-before-method-override': 'medium',
  'security/detect-pseudoRandomBytes': 'low',
  'security/detect-bidi-characters': 'high',
  'security/detect-invisible-characters': 'medium',
};

/** The security analysers, in the order their statuses are listed (each on its own files; see scanner.py). */
const SECURITY_TOOLS = ['bandit', 'eslint'] as const;

export const SCAN_LIMITS = {
  maxFindings: 200,
  maxFiles: 500,
  maxFileBytes: 2 * 1024 * 1024,
  maxOutputBytes: 1024 * 1024,
  /** Per scanner run inside the sandbox, within the whole scan's timeout. */
  toolTimeoutMs: 60_000,
};

const run = promisify(execFile);
const scripts = new Map<string, string>();

/** A script shipped beside this file (copied to dist/ by `npm run build`). */
function shipped(name: 'scanner.py' | 'eslint.mjs'): string {
  let text = scripts.get(name);
  if (text === undefined) scripts.set(name, (text = readFileSync(new URL(`./${name}`, import.meta.url), 'utf8')));
  return text;
}

/** The statuses of the scans that are switched off (reported, so a reader never takes "no finding" for a pass). */
function disabled(o: ScanChangeOptions): ScanStatus[] {
  const scans: ScanStatus[] = [];
  if (!o.security)
    for (const tool of SECURITY_TOOLS) scans.push({ tool, ran: false, reason: 'disabled (verify.security is off)' });
  if (!o.secrets) scans.push({ tool: 'secrets', ran: false, reason: 'disabled (verify.secrets is off)' });
  return scans;
}

function enabledTools(o: ScanChangeOptions): string[] {
  return [...(o.security ? SECURITY_TOOLS : []), ...(o.secrets ? ['secrets'] : [])];
}

function notRun(o: ScanChangeOptions, reason: string): ScanResult {
  return { findings: [], scans: enabledTools(o).map((tool) => ({ tool, ran: false, reason })) };
}

/** Scans what `o.patch` adds; never throws for a scanner's failure (that is a ScanStatus with ran: false). */
export async function scanChange(o: ScanChangeOptions, limits = SCAN_LIMITS): Promise<ScanResult> {
  const r = o.security || o.secrets ? await scanEnabled(o, limits) : { findings: [], scans: [] };
  return { findings: r.findings, scans: [...r.scans, ...disabled(o)] };
}

async function scanEnabled(o: ScanChangeOptions, limits: typeof SCAN_LIMITS): Promise<ScanResult> {
  const started = Date.now();
  const diff = diffLines(o.patch);
  const files = diff.files
    .filter((f) => !f.deleted && f.path && !f.binary)
    .slice(0, limits.maxFiles)
    .map((f) => ({ path: f.path, oldPath: f.oldPath, isNew: f.added, added: f.addedLines }));
  // Nothing added: nothing can be new (each enabled scan "ran" on no file).
  if (!files.some((f) => f.added.length))
    return { findings: [], scans: enabledTools(o).map((tool) => ({ tool, ran: true, files: 0 })) };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'frognano-scan-'));
  let sandbox: Sandbox | undefined;
  try {
    await checkoutBase(o.repoDir, o.baseCommit, dir, o.timeoutMs);
    sandbox = await o.sandboxFactory(dir);
    const left = o.timeoutMs - (Date.now() - started);
    if (left <= 0) return notRun(o, `timed out after ${Math.round(o.timeoutMs / 1000)} s`);
    return await runScanner(sandbox, o, files, left, limits);
  } catch (err) {
    return notRun(o, `the scan sandbox could not be prepared: ${oneLine(err)}`);
  } finally {
    await sandbox?.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** A clean checkout of the base commit from the runner's clone (its objects, never its working tree or hooks). */
async function checkoutBase(repoDir: string, commit: string, dir: string, timeoutMs: number): Promise<void> {
  const git = (cwd: string, ...args: string[]) =>
    run('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'advice.detachedHead=false', ...args], {
      cwd,
      timeout: timeoutMs,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' },
    });
  await git(dir, 'clone', '-q', '--no-checkout', '--no-hardlinks', '--', repoDir, '.');
  await git(dir, 'checkout', '-q', '--detach', commit);
}

type ScanFile = { path: string; oldPath?: string; isNew: boolean; added: number[] };

async function runScanner(
  sb: Sandbox,
  o: ScanChangeOptions,
  files: ScanFile[],
  timeoutMs: number,
  limits: typeof SCAN_LIMITS,
): Promise<ScanResult> {
  const request = JSON.stringify({
    patch: o.patch,
    files,
    security: o.security,
    secrets: o.secrets,
    banditTests: BANDIT_TESTS.join(','),
    eslint: { bundleDir: ESLINT_BUNDLE_INSIDE, rules: ESLINT_RULES, script: shipped('eslint.mjs') },
    toolTimeoutS: Math.max(0.001, Math.min(limits.toolTimeoutMs, timeoutMs) / 1000),
    maxFindings: limits.maxFindings,
    maxFileBytes: limits.maxFileBytes,
    maxFiles: limits.maxFiles,
  });
  const r = await sb.exec('exec python3 -I -S -c "$FN_SCANNER"', {
    clean: true,
    env: { FN_SCANNER: shipped('scanner.py') },
    stdin: request,
    timeoutMs,
    signal: o.signal,
    maxOutputBytes: limits.maxOutputBytes,
  });
  if (r.cancelled) return notRun(o, 'cancelled');
  if (r.timedOut) return notRun(o, `timed out after ${Math.round(timeoutMs / 1000)} s`);
  if (r.exitCode === 127) return notRun(o, 'python3 is not in the sandbox image');
  const parsed = parseOutput(r.stdout, files);
  if (r.exitCode !== 0 || !parsed) return notRun(o, `the scanner crashed (exit ${r.exitCode ?? 'signal'})`);
  return parsed;
}

const ScannerOutputSchema = z.object({
  findings: z
    .array(
      z.object({
        kind: z.enum(['security', 'secret']),
        tool: z.enum([...SECURITY_TOOLS, 'secrets']),
        rule: z.string().max(200),
        severity: z.enum(['low', 'medium', 'high']),
        file: z.string().max(4096),
        line: z.number().int().positive(),
        message: z.string().max(2000),
      }),
    )
    .max(SCAN_LIMITS.maxFindings),
  scans: z
    .array(
      z.object({
        tool: z.enum([...SECURITY_TOOLS, 'secrets']),
        ran: z.boolean(),
        reason: z.string().max(1000).optional(),
        files: z.number().int().nonnegative().optional(),
      }),
    )
    .max(8),
});

/**
 * The scanner's last output line, validated: it comes out of a sandbox that read repository files. A finding is kept
 * only on a line the patch adds to one of the patch's own files (the host never takes a path the sandbox chose).
 */
function parseOutput(stdout: string, files: ScanFile[]): ScanResult | undefined {
  let out;
  try {
    out = ScannerOutputSchema.safeParse(JSON.parse(stdout.trim().split('\n').pop() ?? ''));
  } catch {
    return undefined;
  }
  if (!out.success) return undefined;
  const added = new Map(files.map((f) => [f.path, new Set(f.added)]));
  // The scanner masks secrets inside the sandbox; redact() is the second line, for any format it knows.
  const findings = out.data.findings
    .filter((f) => added.get(f.file)?.has(f.line))
    .map((f) => ({ ...f, rule: redact(f.rule), message: redact(f.message) }));
  return { findings, scans: out.data.scans.map((s) => (s.reason ? { ...s, reason: redact(s.reason) } : s)) };
}

function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return redact(text.split('\n')[0])
    .replace(/\/[^\s:'"]+/g, '…')
    .slice(0, 200);
}
