import { git } from '../github/git.js';
import { verifyEnabled } from '../github/repoConfig.js';
import { publishVerificationCheck } from '../github/verificationCheck.js';
import { DEFAULT_LIMITS } from '../leaf/limits.js';
import { createSandbox } from '../sandbox/index.js';
import { outcomeOfVerdict, type VerificationOutcome } from '../verify/outcome.js';
import type { VerifyOptions } from '../verify/types.js';
import { environmentKey, sandboxFor, throwIfAborted } from './jobSupport.js';
import { setupSnapshotFor } from './setupSnapshot.js';
import { setupEgress } from './solveJob.js';
import type { CheckedChange, Checkout, LiveRun, Published } from './roundVariant.js';

/** Said on the pull request when FROGNANO_VERIFY=off. */
export const OFF_ON_RUNNER = 'verification is off on this runner (FROGNANO_VERIFY=off)';

/**
 * The `verify` step of the round pipeline (src/runner/round.ts), between applyAndCheck and publish: the change as it
 * will be published, measured by the verifier (src/verify/) in fresh sandboxes with the model's round's sandbox
 * config and image. It never fails the round and never passes what it did not measure: a verifier that throws is
 * "not run" with a reason fit for the public (the error itself goes to the log).
 */
export async function verifyStep(
  run: LiveRun,
  checkout: Checkout,
  change: CheckedChange,
): Promise<VerificationOutcome | undefined> {
  const cfg = checkout.config;
  // A context without the verifier (some tests) publishes as before; runner/service.ts always passes it.
  const verify = run.ctx.verifyChange;
  if (!verify) return undefined;
  if (run.ctx.verifyOff) return { state: 'off', reason: OFF_ON_RUNNER };
  if (!verifyEnabled(cfg)) {
    const reason =
      cfg.verify.enabled === false
        ? '`verify.enabled` is false in `.github/frognano.yml`'
        : 'the repository has no test commands (`testCommands` in `.github/frognano.yml`)';
    return { state: 'off', reason };
  }
  try {
    const options = await verifyOptions(run, checkout);
    const verdict = await verify(options);
    return outcomeOfVerdict(verdict);
  } catch (e) {
    throwIfAborted(run.signal);
    run.log.warn({ err: e }, 'verification failed; the change is published as not verified');
    const timedOut = e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError');
    const reason = timedOut
      ? `the verifier ran out of time (\`verify.timeoutMinutes\`: ${cfg.verify.timeoutMinutes})`
      : `the verifier stopped with an error (the runner's log has it under job ${run.jobId.replace(/[`\n]/g, '')})`;
    return { state: 'not_run', reason };
  }
}

/** What the verifier is told: the runner's clone at the base the change applies to, and the change itself. */
async function verifyOptions(run: LiveRun, checkout: Checkout): Promise<VerifyOptions> {
  const { ctx, data } = run;
  const cfg = checkout.config;
  const dir = checkout.workDir;
  const baseCommit = (await git(['rev-parse', 'HEAD'], { cwd: dir, timeoutMs: ctx.gitTimeoutMs })).trim();
  // applyAndCheck staged the change on the clone: its staged diff is exactly what will be published.
  const patch = await git(['diff', '--cached', '--binary', '--no-color', '--no-ext-diff', 'HEAD'], {
    cwd: dir,
    timeoutMs: ctx.gitTimeoutMs,
  });
  const sandboxCfg = sandboxFor(ctx.sandbox, cfg, run.jobId);
  const makeSandbox = ctx.createSandbox ?? createSandbox;
  // The same key as the round's own set-up: the clone's HEAD is the base the change was made on.
  const setupSnapshot = await setupSnapshotFor(run, cfg, dir, baseCommit, sandboxCfg, 'verify');
  return {
    repoDir: dir,
    baseCommit,
    patch,
    setupCommands: cfg.setupCommands,
    testCommands: cfg.testCommands,
    // Under the fleet's ceiling like the model's round; verification's setups get the registries (src/verify passes
    // a yes/no), so a repository's own allow entries apply to the model's round only.
    // The same egress as the model's round: the repository's allowlist under the fleet's ceiling.
    setupNetwork: setupEgress(cfg) ?? false,
    reportGlobs: cfg.verify.reports,
    sandboxFactory: (ws) => makeSandbox(sandboxCfg, ws),
    environmentKey: await environmentKey(sandboxCfg),
    repository: `${data.installationId}/${data.owner}/${data.repo}`,
    task: `${data.title}\n\n${data.body}`,
    security: cfg.verify.security,
    secrets: cfg.verify.secrets,
    timeoutMs: cfg.verify.timeoutMinutes * 60_000,
    setupTimeoutMs: DEFAULT_LIMITS.setupTimeoutMs,
    testTimeoutMs: DEFAULT_LIMITS.testTimeoutMs,
    ...(ctx.verifyCache ? { cache: ctx.verifyCache } : {}),
    ...(setupSnapshot ? { setupSnapshot } : {}),
    signal: run.signal,
    onProgress: (detail) => run.reporter.update({ phase: 'verifying', detail: `Verifying: ${detail}` }),
  };
}

/** The check run on the pushed head; a failure to post it is logged, never a failed round (the PR says it all). */
export async function publishVerification(
  run: LiveRun,
  published: Published,
  outcome: VerificationOutcome | undefined,
): Promise<void> {
  if (!outcome || !published.headSha) return;
  const { data } = run;
  const where = { owner: data.owner, repo: data.repo, headSha: published.headSha, outcome, detailsUrl: run.page?.url };
  await publishVerificationCheck(run.access.octokit, where).catch((err: unknown) =>
    run.log.warn({ err }, 'could not create the verification check run'),
  );
}
