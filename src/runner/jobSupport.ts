import { promises as fs } from 'node:fs';
import type { Logger } from 'pino';
import { createInstallationAccess, type InstallationAccess } from '../github/client.js';
import type { RepoConfig } from '../github/repoConfig.js';
import { DEFAULT_LIMITS, type LeafLimits } from '../leaf/limits.js';
import type { SolveResult } from '../leaf/solve.js';
import type { LeafEvent } from '../leaf/events.js';
import type { ProgressReporter } from './progress.js';
import type { SandboxConfig } from '../sandbox/config.js';
import { sandboxIdentity } from '../sandbox/identity.js';
import { forgetSecret, redact } from '../util/redact.js';
import type { RunnerProgress } from '../queue/schema.js';
import type { AbortCause, FailureCategory, RunnerContext } from './types.js';

/** Helpers every kind of round (src/runner/round.ts) and the stalled-job report use alike. */

export function phaseCategory(phase: RunnerProgress['phase'] | undefined): FailureCategory {
  return phase === 'publishing' ? 'publish' : phase === 'solving' ? 'sandbox' : 'unexpected';
}

/** Fresh enough to clone is not fresh enough to publish: keep a margin for the push and the API calls. */
const TOKEN_MARGIN_MS = 10 * 60_000;

export function tokenExpiresSoon(access: InstallationAccess): boolean {
  const expires = Date.parse(access.expiresAt);
  return Number.isFinite(expires) && expires - Date.now() < TOKEN_MARGIN_MS;
}

/** How this runner gets an installation-authenticated client for one repository. */
export function installationAccessFor(
  ctx: RunnerContext,
): (installationId: number, repo: string) => Promise<InstallationAccess> {
  return (
    ctx.createAccess ??
    ((installationId, repo) => createInstallationAccess(ctx.app, { installationId, repo, log: ctx.logger }))
  );
}

export function jobLimits(ctx: RunnerContext, cfg: RepoConfig): Partial<LeafLimits> {
  const cap = ctx.maxTurns ?? DEFAULT_LIMITS.maxTurns;
  const wallCap = ctx.wallTimeMs ?? DEFAULT_LIMITS.wallTimeMs;
  return {
    maxTurns: Math.min(cfg.limits.maxTurns ?? cap, cap),
    wallTimeMs: Math.min(cfg.limits.wallTimeMinutes ? cfg.limits.wallTimeMinutes * 60_000 : wallCap, wallCap),
  };
}

/** The repository may pick its docker image; the runner's isolation settings stay the runner's. */
export function sandboxFor(base: SandboxConfig, cfg: RepoConfig, jobId: string): SandboxConfig {
  const jobLabel = { 'dev.frognano.job': jobId.slice(0, 200) };
  if (base.kind === 'docker')
    return { ...base, image: cfg.sandboxImage ?? base.image, labels: { ...base.labels, ...jobLabel } };
  if (base.kind === 'auto')
    return {
      ...base,
      docker: {
        ...base.docker,
        ...(cfg.sandboxImage ? { image: cfg.sandboxImage } : {}),
        labels: { ...(base.docker.labels ?? {}), ...jobLabel },
      },
    };
  return base;
}

/**
 * The sandbox in cache keys (verification's base results, set-up snapshots): the image's ID on docker, the host's
 * identity on bwrap (src/sandbox/identity.ts). Throws when the image cannot be inspected.
 */
export function environmentKey(cfg: SandboxConfig): Promise<string> {
  return sandboxIdentity(cfg);
}

/** The stored trajectory must not hold the token, whatever a tool printed; solve redacts, this double-checks. */
export async function scrubStoredTrajectory(result: SolveResult, log: Logger): Promise<void> {
  for (const p of [result.trajectoryJsonPath, result.trajectoryMarkdownPath, result.patchPath]) {
    if (!p) continue;
    const text = await fs.readFile(p, 'utf8').catch(() => null);
    if (text === null) continue;
    const clean = redact(text);
    if (clean !== text) {
      log.error({ file: p }, 'a secret reached a stored trajectory file; it was redacted');
      await fs.writeFile(p, clean);
    }
  }
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortError(signal);
}

export function abortError(signal: AbortSignal): Error {
  const cause = signal.reason as AbortCause | undefined;
  return new Error(cause?.kind === 'shutdown' ? 'runner shutting down' : 'cancelled');
}

/** Tokens expire within the hour; keep redacting them a while in case a late log line mentions one. */
export function forgetSecretLater(token: string): void {
  setTimeout(() => forgetSecret(token), 2 * 60 * 60_000).unref();
}

/** A round's Leaf listener: each event to the progress reporter, and each model turn into the runner's metrics. */
export function roundListener(ctx: RunnerContext, reporter: ProgressReporter): (e: LeafEvent) => void {
  return (e) => {
    reporter.onEvent(e);
    if (e.type === 'turn_end') {
      ctx.metrics?.recordModelTurn({
        backend: ctx.backend.info().backend,
        completionTokens: e.completionTokens,
        elapsedMs: e.generateMs,
        promptTokens: e.promptTokens,
      });
    }
  };
}
