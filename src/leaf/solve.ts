import { promises as fs } from 'node:fs';
import path from 'node:path';
export { COMMAND_OUTPUT_TAIL_CHARS, type BlockedSetupRequest, type CommandResult } from './botCommands.js';
import type { ModelBackend } from '../inference/types.js';
import type { ExecOptions, Sandbox } from '../sandbox/types.js';
import { blockedSetupRequests, runBotCommand, type BlockedSetupRequest, type CommandResult } from './botCommands.js';
import { safeListener, type LeafEvent } from './events.js';
import { resolveLimits, type LeafLimits } from './limits.js';
import { runLeaf } from './loop.js';
import type { Sampling } from './sampling.js';
import { computePatch, type ChangedFile } from './patch.js';
import {
  redactDeep,
  renderTrajectoryMarkdown,
  serializeTrajectory,
  type LeafTask,
  type TestResultFacts,
  type Trajectory,
} from './trajectory.js';
import { setUpSandbox, type SetupSnapshotUse } from './setUp.js';
import { prepareWorkspace } from './workspace.js';

export interface SolveOptions {
  /** A git checkout; copied, never modified. */
  sourceDir: string;
  /** Creates the sandbox around the workspace copy; solve closes it. */
  sandboxFactory: (workspaceDir: string) => Promise<Sandbox>;
  backend: ModelBackend;
  task: LeafTask;
  limits?: Partial<LeafLimits>;
  /** Run in the sandbox before the model starts (installing dependencies, say); failures are told to the model. */
  setupCommands?: string[];
  /**
   * The repository opted in to network for its setup commands (`setup.network`): what its egress proxy admits
   * (`true`: the registries). The agent's own commands never have network. docker and bwrap: proxy-only egress,
   * no interface but loopback (see ExecOptions.network).
   */
  setupNetwork?: ExecOptions['network'];
  /**
   * The set-up snapshot of this round's base (docs/warm-starts.md): restored instead of running the set-up when it
   * exists, stored after a set-up whose commands all exited 0 (before the model runs).
   */
  setupSnapshot?: SetupSnapshotUse;
  /** Run after the model finished; their results are reported, they do not change the patch. */
  testCommands?: string[];
  /** When given: trajectory.json, trajectory.md and changes.patch are written here. */
  outDir?: string;
  signal?: AbortSignal;
  onEvent?: (e: LeafEvent) => void;
  /** Overrides of upstream's eval sampling (LEAF_SAMPLING). */
  sampling?: Partial<Sampling>;
  /** Environment of the in-sandbox tool runner (upstream's LEAF_* limits, e.g. LEAF_BASH_TIMEOUT_SEC). */
  toolEnv?: Record<string, string>;
  /** The trajectory's instance_id (a benchmark's, for `frognano eval`); default: derived from the task. */
  instanceId?: string;
}

export interface SolveResult {
  trajectory: Trajectory;
  /** `git diff --binary` of everything the run changed against the base commit; '' when nothing changed or cancelled. */
  patch: string;
  changedFiles: ChangedFile[];
  baseCommit: string;
  /** Empty when the set-up was restored from a snapshot (`setupReusedKey`). */
  setupResults: CommandResult[];
  /** What the egress proxy refused the setup commands, each with its command (empty without network). */
  blockedRequests: BlockedSetupRequest[];
  setupReusedKey?: string;
  testResults: CommandResult[];
  trajectoryJsonPath?: string;
  trajectoryMarkdownPath?: string;
  patchPath?: string;
}

/**
 * One job, start to end: copy the repository, open a sandbox on the copy, run the setup commands, let
 * the model work (the Leaf loop), compute the patch inside the sandbox, run the test commands, write
 * the artefacts. The patch is taken before the tests run, so files the tests create (caches, reports)
 * do not end up in the pull request. The workspace and sandbox are always released.
 */
export async function solve(opts: SolveOptions): Promise<SolveResult> {
  const limits = resolveLimits(opts.limits);
  const emit = safeListener(opts.onEvent);
  const ws = await prepareWorkspace(opts.sourceDir);
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await opts.sandboxFactory(ws.repoDir);

    const setUp = await setUpSandbox(sandbox, opts.setupCommands ?? [], {
      timeoutMs: limits.setupTimeoutMs,
      emit,
      signal: opts.signal,
      network: opts.setupNetwork,
      snapshot: opts.setupSnapshot,
      capture: true,
    });
    const { results: setupResults, notes } = setUp;

    const trajectory = await runLeaf({
      sandbox,
      backend: opts.backend,
      task: opts.task,
      limits,
      signal: opts.signal,
      onEvent: emit,
      sampling: opts.sampling,
      toolEnv: opts.toolEnv,
      notes,
      instanceId: opts.instanceId,
    });

    let patch = '';
    let changedFiles: ChangedFile[] = [];
    const testResults: CommandResult[] = [];
    if (trajectory.exit_reason !== 'cancelled' && !opts.signal?.aborted) {
      try {
        ({ patch, changedFiles } = await computePatch(sandbox, ws.baseCommit, opts.signal));
      } catch (err) {
        // Keep the trajectory: it is the only record of what happened. The caller sees the error.
        trajectory.error = [trajectory.error, `could not compute the patch: ${(err as Error).message}`]
          .filter(Boolean)
          .join('\n');
        if (opts.outDir) await writeArtefacts(opts.outDir, trajectory, '');
        const failure = new Error(`could not compute the patch inside the sandbox: ${(err as Error).message}`, {
          cause: err,
        });
        // A sandbox that stopped the job at a limit (SandboxLimitError) refuses the patch too: keep its words for the issue.
        const publicReason = (err as { publicReason?: unknown }).publicReason;
        throw typeof publicReason === 'string' ? Object.assign(failure, { publicReason }) : failure;
      }
      trajectory.output_patch = patch;
      for (const command of opts.testCommands ?? []) {
        if (opts.signal?.aborted) break;
        testResults.push(
          await runBotCommand(sandbox, 'test', command, { timeoutMs: limits.testTimeoutMs, emit, signal: opts.signal }),
        );
      }
    }

    // Into the trajectory files too, so `frognano view` and `replay` show what the tests said.
    if (testResults.length) trajectory.frognano.test_results = testResults.map(testResultFacts);
    // The caller may log or store the trajectory: hand out the scrubbed copy only.
    const result: SolveResult = {
      trajectory: redactDeep(trajectory),
      patch,
      changedFiles,
      baseCommit: ws.baseCommit,
      setupResults,
      blockedRequests: blockedSetupRequests(setupResults),
      ...(setUp.reusedKey ? { setupReusedKey: setUp.reusedKey } : {}),
      testResults,
    };
    if (opts.outDir) Object.assign(result, await writeArtefacts(opts.outDir, trajectory, patch));
    return result;
  } finally {
    await sandbox?.close().catch(() => undefined);
    await ws.cleanup().catch(() => undefined);
  }
}

function testResultFacts(c: CommandResult): TestResultFacts {
  return {
    command: c.command,
    exit_code: c.exitCode,
    timed_out: c.timedOut,
    output_tail: c.outputTail,
    duration_ms: c.durationMs,
  };
}

/** trajectory.json (secrets scrubbed), trajectory.md and, when there is one, changes.patch (verbatim: it must apply). */
async function writeArtefacts(
  outDir: string,
  trajectory: Trajectory,
  patch: string,
): Promise<Pick<SolveResult, 'trajectoryJsonPath' | 'trajectoryMarkdownPath' | 'patchPath'>> {
  await fs.mkdir(outDir, { recursive: true });
  const trajectoryJsonPath = path.join(outDir, 'trajectory.json');
  const trajectoryMarkdownPath = path.join(outDir, 'trajectory.md');
  await fs.writeFile(trajectoryJsonPath, serializeTrajectory(trajectory));
  await fs.writeFile(trajectoryMarkdownPath, renderTrajectoryMarkdown(trajectory));
  if (!patch) return { trajectoryJsonPath, trajectoryMarkdownPath };
  const patchPath = path.join(outDir, 'changes.patch');
  await fs.writeFile(patchPath, patch);
  return { trajectoryJsonPath, trajectoryMarkdownPath, patchPath };
}
