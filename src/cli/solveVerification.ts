import type { SolveResult } from '../leaf/solve.js';
import type { Verdict } from '../verify/types.js';
import { writeLine, type CliIo } from './io.js';
import { onInterrupt } from './interrupt.js';
import type { ProgressReporter } from './progress.js';
import type { RepoChecks } from './repoChecks.js';
import type { ConcreteSandboxConfig } from './sandboxChoice.js';
import { safeLine, verdictText } from './verdictText.js';
import { notMeasured, verifyFromCli, writeVerdict } from './verification.js';

/** What solve says about verification: the verdict, or why there is none (never a pass it did not measure). */
export type SolveVerification =
  | { state: 'verified'; verdict: Verdict; path: string }
  | { state: 'not_run'; reason: string; verdict?: Verdict; path?: string }
  | { state: 'off'; reason: string };

export interface SolveVerifyContext {
  repoDir: string;
  checks: RepoChecks;
  sandboxCfg: ConcreteSandboxConfig;
  outDir: string;
  noVerify: boolean;
}

/** Why solve does not verify this run, if it does not. */
function offReason(r: SolveResult, c: SolveVerifyContext): string | undefined {
  if (c.noVerify) return 'turned off with --no-verify';
  if (c.checks.verify.enabled === false) return '`verify.enabled` is false in .github/frognano.yml';
  if (c.checks.testCommands.length === 0) return 'no test commands (--test, or testCommands in .github/frognano.yml)';
  if (!r.patch.trim()) return 'no patch to verify';
  return undefined;
}

/**
 * After the model's run: the patch solve produced, measured against the repository's base commit in fresh
 * sandboxes (DESIGN.md "Evidence the model could not touch"). A verifier that fails is "not run", never a failed
 * solve: the patch and trajectory are already written. Returns undefined when Ctrl-C stopped it.
 */
export async function verifySolved(
  r: SolveResult,
  c: SolveVerifyContext,
  progress: ProgressReporter,
  io: CliIo,
): Promise<SolveVerification | undefined> {
  const off = offReason(r, c);
  if (off) return { state: 'off', reason: off };
  const interrupt = onInterrupt(progress, io, 'stopping the verification (the patch and trajectory are written)');
  try {
    const verdict = await verifyFromCli({
      repoDir: c.repoDir,
      baseCommit: r.baseCommit,
      patch: r.patch,
      checks: c.checks,
      sandboxCfg: c.sandboxCfg,
      security: c.checks.verify.security,
      secrets: c.checks.verify.secrets,
      timeoutMs: c.checks.verify.timeoutMinutes * 60_000,
      // The issue as the model read it: a test it names may be removed without counting as a regression.
      task: `${r.trajectory.frognano.task.title}\n\n${r.trajectory.frognano.task.body}`,
      signal: interrupt.signal,
      onProgress: (detail) => progress.phase(detail),
    });
    const path = await writeVerdict(c.outDir, verdict);
    if (interrupt.interrupted) return undefined;
    const unmeasured = notMeasured(verdict);
    return unmeasured ? { state: 'not_run', reason: unmeasured, verdict, path } : { state: 'verified', verdict, path };
  } catch (err) {
    if (interrupt.interrupted) return undefined;
    writeLine(io.stderr, `frognano: the verifier failed: ${(err as Error).message}`);
    return { state: 'not_run', reason: 'the verifier stopped with an error (above)' };
  } finally {
    interrupt.dispose();
    progress.stop();
  }
}

/** The summary's verification section: the result of the run, set apart from what the model's workspace said. */
export function verificationSummary(v: SolveVerification | undefined): string[] {
  if (!v) return [];
  if (v.state === 'off') return ['', `Verification: not run (${v.reason}).`];
  if (v.state === 'not_run' && !v.verdict)
    return ['', `Verification: did not run: ${safeLine(v.reason, 300)}. This is not a pass: nothing was measured.`];
  return ['', ...verdictText(v.verdict!)];
}

/** solve --json's `verification` field. */
export function verificationJson(v: SolveVerification | undefined) {
  if (!v) return null;
  if (v.state === 'off') return { state: v.state, reason: v.reason };
  return {
    state: v.state,
    ...(v.state === 'not_run' ? { reason: v.reason } : {}),
    conclusion: v.verdict?.conclusion ?? null,
    headline: v.verdict?.headline ?? null,
    path: v.path ?? null,
  };
}
