import { rmdir } from 'node:fs/promises';
import { testCommandStatus } from '../testStatus.js';
import path from 'node:path';
import type { BackendConfig } from '../../inference/index.js';
import type { LeafLimits } from '../../leaf/limits.js';
import { solve, type SolveResult } from '../../leaf/solve.js';
import { describeExit, endedInMalformedCalls } from '../../leaf/trajectory.js';
import type { Sampling } from '../../leaf/sampling.js';
import { createSandbox } from '../../sandbox/index.js';
import { assertSandboxKind, parseCommandArgs, parseIssueRef } from '../args.js';
import { renderDiffStat } from '../diffStat.js';
import { CliError, EXIT, setupError, UsageError, type ExitCode } from '../exitCodes.js';
import { formatDuration, formatTokens, oneLine } from '../format.js';
import { SOLVE_HELP } from '../help.js';
import { writeLine, type CliIo } from '../io.js';
import { taskFromFile, taskFromGitHub, taskFromText, type IssueTask } from '../issueSource.js';
import { backendConfigFromFlags, describeBackend, precheckBackend } from '../modelConfig.js';
import { onInterrupt } from '../interrupt.js';
import { prepareOutDir } from '../outDir.js';
import { ProgressReporter } from '../progress.js';
import {
  closeBackend,
  limitsFromFlags,
  openBackend,
  RUN_OPTIONS,
  samplingOrUsageError,
  toolEnvFromFlags,
} from '../runOptions.js';
import { usableSandbox, type ConcreteSandboxConfig } from '../sandboxChoice.js';
import { checkSourceRepo, type SourceRepo } from '../sourceRepo.js';
import { repoChecks, type RepoChecks } from '../repoChecks.js';
import { verificationJson, verificationSummary, verifySolved, type SolveVerification } from '../solveVerification.js';
import { registerSecret } from '../../util/redact.js';

const OPTIONS = {
  'issue-file': { type: 'string' },
  issue: { type: 'string' },
  github: { type: 'string' },
  ...RUN_OPTIONS,
  setup: { type: 'string', multiple: true },
  test: { type: 'string', multiple: true },
  'no-verify': { type: 'boolean' },
  out: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseCommandArgs<typeof OPTIONS>>['values'];

/** `frognano solve`: B's solve() — the runner's very code path — with a local repo, sandbox and model. */
export async function solveCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('solve', args, OPTIONS);
  if (values.help) {
    io.stdout.write(SOLVE_HELP);
    return EXIT.OK;
  }
  try {
    return await runSolve(values, positionals, io);
  } catch (err) {
    // --json promises a JSON document on stdout whatever happens; the message still goes to stderr too.
    if (values.json && err instanceof CliError) {
      writeLine(
        io.stdout,
        JSON.stringify({ exitCode: err.exitCode, error: err.message, hint: err.hint ?? null }, null, 2),
      );
    }
    throw err;
  }
}

async function runSolve(values: Values, positionals: string[], io: CliIo): Promise<number> {
  // Known secrets are scrubbed from everything solve writes (trajectory, outputs), whatever a command echoes.
  registerSecret(io.env.GITHUB_TOKEN);
  registerSecret(io.env.FROGNANO_OPENAI_API_KEY);

  // 1. Everything the command line alone can get wrong: exit 2 before touching anything.
  if (positionals.length !== 1) {
    throw new UsageError(
      positionals.length === 0
        ? 'solve needs the repository directory.'
        : `solve takes one repository directory, got ${positionals.length} arguments.`,
      'solve',
    );
  }
  const sources = (['issue-file', 'issue', 'github'] as const).filter((k) => values[k] !== undefined);
  if (sources.length !== 1) {
    throw new UsageError(
      sources.length === 0
        ? 'solve needs the issue: --issue-file FILE, --issue TEXT or --github OWNER/REPO#N.'
        : `give the issue once: ${sources.map((s) => `--${s}`).join(' and ')} were both given.`,
      'solve',
    );
  }
  const limits = limitsFromFlags(values, 'solve');
  const sampling = samplingOrUsageError(values, 'solve');
  const toolEnv = toolEnvFromFlags(values, 'solve');
  const githubRef = values.github !== undefined ? parseIssueRef(values.github, 'solve') : undefined;
  assertSandboxKind(values.sandbox, 'solve');
  const backendCfg = backendConfigFromFlags(values, io.env, io.cwd, 'solve');

  // 2. Setup: repository, model files, sandbox, issue. Failures exit 3 and nothing has run yet.
  const repo = await checkSourceRepo(positionals[0], io.cwd);
  const checks = await repoChecks(repo.dir, { setup: values.setup, test: values.test });
  if (!backendCfg) {
    throw setupError(
      'no model configured',
      'pass --model-dir DIR, --endpoint URL --model NAME or --replay FILE (or set FROGNANO_MODEL_DIR, FROGNANO_OPENAI_BASE_URL + FROGNANO_OPENAI_MODEL, or FROGNANO_REPLAY_FILE; see frognano solve --help)',
    );
  }
  await precheckBackend(backendCfg);
  const sandboxCfg = await usableSandbox(values.sandbox, io.env);
  const task = await loadTask(values, githubRef, io);
  const out = await prepareOutDir({ out: values.out, cwd: io.cwd, sourceDir: repo.dir });
  try {
    return await runInOutDir(values, io, {
      repo,
      checks,
      backendCfg,
      sandboxCfg,
      task,
      limits,
      sampling,
      toolEnv,
      out,
    });
  } finally {
    // A run that never started leaves no empty result directory behind.
    await rmdir(out.dir).catch(() => undefined);
  }
}

async function runInOutDir(
  values: Values,
  io: CliIo,
  ctx: {
    repo: SourceRepo;
    checks: RepoChecks;
    backendCfg: BackendConfig;
    sandboxCfg: ConcreteSandboxConfig;
    task: IssueTask;
    limits: Partial<LeafLimits>;
    sampling: Partial<Sampling>;
    toolEnv: Record<string, string>;
    out: { dir: string; movedFromCwd: boolean };
  },
): Promise<number> {
  const { repo, checks, backendCfg, sandboxCfg, task, limits, sampling, toolEnv, out } = ctx;

  const progress = new ProgressReporter(io.stderr, { tty: Boolean(io.stderr.isTTY), columns: io.stderr.columns });
  noteSetup(progress, repo, sandboxCfg, out);
  const backend = await openBackend(backendCfg, progress);

  // 3. The run. Ctrl-C aborts it; solve() still returns (exit reason `cancelled`) and writes what it has.
  const interrupt = onInterrupt(progress, io, 'stopping the run and writing the partial trajectory');

  progress.phase(`copying ${repo.dir} into a ${sandboxCfg.kind} sandbox`);
  let result: SolveResult;
  try {
    result = await solve({
      sourceDir: repo.dir,
      sandboxFactory: (workspaceDir: string) => createSandbox(sandboxCfg, workspaceDir),
      backend,
      task,
      limits,
      sampling,
      toolEnv,
      setupCommands: checks.setupCommands,
      testCommands: checks.testCommands,
      outDir: out.dir,
      signal: interrupt.signal,
      onEvent: progress.onEvent,
    });
  } catch (err) {
    progress.stop();
    if (interrupt.interrupted) {
      writeLine(io.stderr, `frognano: interrupted before the run produced a trajectory (${(err as Error).message})`);
      return EXIT.INTERRUPTED;
    }
    const name = (err as Error).name;
    // The copy or the sandbox could not be set up: nothing ran, it is the environment (exit 3).
    if (name === 'WorkspaceError' || name === 'SandboxUnavailableError') throw setupError((err as Error).message);
    throw new CliError(
      `the run failed: ${(err as Error).message}`,
      EXIT.RUNTIME,
      `partial results, if any, are in ${out.dir}`,
    );
  } finally {
    interrupt.dispose();
    await closeBackend(backend);
  }
  progress.stop();

  let code = exitCodeFor(result, interrupt.interrupted);
  let verification: SolveVerification | undefined;
  if (code === EXIT.OK) {
    const noVerify = values['no-verify'] === true;
    const verifyCtx = { repoDir: repo.dir, checks, sandboxCfg, outDir: out.dir, noVerify };
    verification = await verifySolved(result, verifyCtx, progress, io);
    // Ctrl-C during the verification: the run's results stand, the verdict does not exist.
    if (!verification) code = EXIT.INTERRUPTED;
  }
  if (values.json) {
    const summary = summaryJson(result, code, out.dir, describeBackend(backendCfg), sandboxCfg.kind);
    writeLine(io.stdout, JSON.stringify({ ...summary, verification: verificationJson(verification) }, null, 2));
  } else io.stdout.write(summaryText(result, code, out.dir, verification));
  return code;
}

/** What the person running solve should know before it starts: no isolation, where results go, dirty files. */
function noteSetup(
  progress: ProgressReporter,
  repo: SourceRepo,
  sandboxCfg: ConcreteSandboxConfig,
  out: { dir: string; movedFromCwd: boolean },
): void {
  if (sandboxCfg.kind === 'local')
    progress.note(
      "warning: local sandbox: the model's commands run on this machine with no isolation (use docker or bwrap for untrusted code)",
    );
  if (out.movedFromCwd)
    progress.note(
      `note: writing results to ${out.dir} (the current directory is inside the repository, which solve never writes to)`,
    );
  if (repo.dirtyFiles > 0) {
    progress.note(
      `note: ${repo.dirtyFiles} uncommitted file${repo.dirtyFiles === 1 ? '' : 's'} in ${repo.dir} ${repo.dirtyFiles === 1 ? 'is' : 'are'} copied too and will show up in the patch (commit or stash first to keep them out)`,
    );
  }
}

async function loadTask(v: Values, ref: ReturnType<typeof parseIssueRef> | undefined, io: CliIo): Promise<IssueTask> {
  if (v['issue-file'] !== undefined) return taskFromFile(path.resolve(io.cwd, v['issue-file']));
  if (ref) return taskFromGitHub(ref, io.env);
  return taskFromText(v.issue ?? '');
}

/** 130 interrupted > 4 model/sandbox failure > 0 patch > 1 no patch. */
export function exitCodeFor(r: SolveResult, interrupted: boolean): ExitCode {
  const reason = r.trajectory.exit_reason;
  if (interrupted || reason === 'cancelled') return EXIT.INTERRUPTED;
  if (reason === 'llm_query_error' || reason === 'tool_error') return EXIT.RUNTIME;
  return r.patch.trim() ? EXIT.OK : EXIT.NO_PATCH;
}

function summaryText(r: SolveResult, code: ExitCode, outDir: string, v: SolveVerification | undefined): string {
  const t = r.trajectory;
  const lines: string[] = [];
  const verdict =
    code === EXIT.OK
      ? 'Patch produced'
      : code === EXIT.NO_PATCH
        ? 'No patch'
        : code === EXIT.INTERRUPTED
          ? 'Interrupted'
          : 'Run failed';
  lines.push(
    `${verdict}: ${describeExit(t)} after ${t.n_steps} turn${t.n_steps === 1 ? '' : 's'} in ` +
      `${formatDuration(t.elapsed_sec * 1000)} (${formatTokens(t.context_tokens)} tokens in context, ${formatTokens(t.frognano.total_completion_tokens)} generated).`,
  );
  if (t.error) lines.push(`Error: ${oneLine(t.error, 500)}`);
  if (r.patch.trim()) {
    lines.push('', ...renderDiffStat(r.changedFiles));
  }
  // The model's workspace is where the model ran: its test results are what it saw, never the result (the verdict is).
  for (const [title, results, isTest] of [
    ["Setup (in the model's workspace)", r.setupResults, false],
    ["Tests in the model's workspace (what the model saw, not the result)", r.testResults, true],
  ] as const) {
    if (!results.length) continue;
    lines.push('', `${title}:`);
    for (const c of results) {
      // A test command that ran no test is no pass, whatever its exit code (testStatus.ts).
      const status = isTest
        ? testCommandStatus(c)
        : c.timedOut
          ? '✗ timed out'
          : c.exitCode === 0
            ? '✓ passed'
            : `✗ exit ${c.exitCode ?? 'killed'}`;
      lines.push(`  ${status}  ${c.command}  (${formatDuration(c.durationMs)})`);
    }
  }
  lines.push(...verificationSummary(v));
  lines.push('', `Results in ${outDir}:`);
  if (r.patchPath) lines.push(`  patch       ${r.patchPath}`);
  if (v && v.state !== 'off' && v.path) lines.push(`  verdict     ${v.path}`);
  if (r.trajectoryJsonPath) lines.push(`  trajectory  ${r.trajectoryJsonPath}`);
  if (r.trajectoryMarkdownPath) lines.push(`  readable    ${r.trajectoryMarkdownPath}`);
  if (r.trajectoryJsonPath) lines.push(`Review it with: frognano replay ${r.trajectoryJsonPath}`);
  return `${lines.join('\n')}\n`;
}

function summaryJson(r: SolveResult, code: ExitCode, outDir: string, model: string, sandbox: string) {
  const t = r.trajectory;
  return {
    exitCode: code,
    patchProduced: Boolean(r.patch.trim()),
    exitReason: t.exit_reason,
    error: t.error,
    turns: t.n_steps,
    elapsedSec: t.elapsed_sec,
    contextTokens: t.context_tokens,
    completionTokens: t.frognano.total_completion_tokens,
    exitSummary: describeExit(t),
    model,
    sandbox,
    baseCommit: r.baseCommit,
    changedFiles: r.changedFiles,
    setupResults: r.setupResults,
    testResults: r.testResults,
    outDir,
    patchPath: r.patchPath ?? null,
    trajectoryJsonPath: r.trajectoryJsonPath ?? null,
    trajectoryMarkdownPath: r.trajectoryMarkdownPath ?? null,
    finalMessage: t.final_message,
  };
}
