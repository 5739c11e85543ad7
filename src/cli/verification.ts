import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULT_LIMITS } from '../leaf/limits.js';
import { createSandbox } from '../sandbox/index.js';
import { verifyChange, type BaseResultCache, type Verdict } from '../verify/index.js';
import type { RepoChecks } from './repoChecks.js';
import { environmentKey, type ConcreteSandboxConfig } from './sandboxChoice.js';

export const VERIFICATION_FILE = 'verification.json';

export interface CliVerifyOptions {
  /** The source repository's top level: sides are cloned from its `baseCommit`, never from its working tree. */
  repoDir: string;
  baseCommit: string;
  patch: string;
  checks: RepoChecks;
  sandboxCfg: ConcreteSandboxConfig;
  security: boolean;
  secrets: boolean;
  timeoutMs: number;
  /** The issue the patch answers (solve): a test it names may be removed without counting as a regression. */
  task?: string;
  cache?: BaseResultCache;
  signal?: AbortSignal;
  onProgress?: (detail: string) => void;
}

/**
 * The verifier (src/verify/) on a patch from the command line, with the runner's per-command limits. Set-up runs
 * without network: the CLI has no egress proxy to give `setup.network` its meaning.
 */
export async function verifyFromCli(o: CliVerifyOptions): Promise<Verdict> {
  return verifyChange({
    repoDir: o.repoDir,
    baseCommit: o.baseCommit,
    patch: o.patch,
    setupCommands: o.checks.setupCommands,
    testCommands: o.checks.testCommands,
    setupNetwork: false,
    reportGlobs: o.checks.verify.reports,
    sandboxFactory: (workspaceDir) => createSandbox(o.sandboxCfg, workspaceDir),
    environmentKey: await environmentKey(o.sandboxCfg),
    security: o.security,
    secrets: o.secrets,
    repository: o.repoDir,
    ...(o.task !== undefined ? { task: o.task } : {}),
    timeoutMs: o.timeoutMs,
    setupTimeoutMs: DEFAULT_LIMITS.setupTimeoutMs,
    testTimeoutMs: DEFAULT_LIMITS.testTimeoutMs,
    ...(o.cache ? { cache: o.cache } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
  });
}

/** Writes the verdict as `verification.json` in `outDir`; returns its path. */
export async function writeVerdict(outDir: string, verdict: Verdict): Promise<string> {
  const file = path.join(outDir, VERIFICATION_FILE);
  await fs.writeFile(file, `${JSON.stringify(verdict, null, 2)}\n`);
  return file;
}

/** Whether a side could not be measured at all: the verdict then says nothing about the patch. */
export function notMeasured(v: Verdict): string | undefined {
  if (v.base.notRun !== undefined) return `the base could not be measured: ${v.base.notRun}`;
  if (v.patched.notRun !== undefined) return `the patch could not be measured: ${v.patched.notRun}`;
  return undefined;
}
