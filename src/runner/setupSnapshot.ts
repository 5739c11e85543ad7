import type { Logger } from 'pino';
import { git } from '../github/git.js';
import type { RepoConfig } from '../github/repoConfig.js';
import { DEFAULT_KEY_FILES, setupSnapshotKey } from '../leaf/setupSnapshot.js';
import type { SetupSnapshotUse } from '../leaf/setUp.js';
import type { JobData } from '../queue/schema.js';
import type { SandboxConfig } from '../sandbox/config.js';
import { environmentKey } from './jobSupport.js';
import type { RunnerContext } from './types.js';

/**
 * The round's set-up snapshot (docs/warm-starts.md), the same for the model's round and its verification: keyed on
 * the runner's clone at `commit` (made by the bot, read before the model ran). None when the runner has no cache, the
 * repository has no set-up or turned it off (`setup.cache: false`), or the key cannot be made (logged; the set-up
 * then simply runs).
 */
export async function setupSnapshotFor(
  run: { ctx: RunnerContext; data: JobData; log: Logger },
  config: RepoConfig,
  repoDir: string,
  /** The base commit; undefined: the clone's HEAD. */
  commit: string | undefined,
  sandboxCfg: SandboxConfig,
  /** `verify`: a verification side, which restores the repository's snapshots only and stores none. */
  purpose: 'round' | 'verify',
): Promise<SetupSnapshotUse | undefined> {
  const { ctx, data, log } = run;
  const cache = ctx.setupCache;
  if (!cache || !config.setup.cache || config.setupCommands.length === 0) return undefined;
  const repository = `${data.installationId}/${data.owner}/${data.repo}`;
  try {
    const base = commit ?? (await git(['rev-parse', 'HEAD'], { cwd: repoDir, timeoutMs: ctx.gitTimeoutMs })).trim();
    const key = await setupSnapshotKey({
      repoDir,
      commit: base,
      repository,
      setupCommands: config.setupCommands,
      network: JSON.stringify(config.setup.network),
      environment: await environmentKey(sandboxCfg),
      keyFiles: config.setup.cacheKeyFiles,
    });
    return {
      cache,
      repository,
      key,
      keyFiles: [...DEFAULT_KEY_FILES, ...config.setup.cacheKeyFiles],
      // A follow-up or CI-fix round sets up the pull request's head, which the model wrote: it stores into that pull
      // request's own scope only (a file the key does not cover could shape what it stores), so a first attempt or a
      // verification side never restores it. A verification side holds the patch: it never stores.
      mayStore: purpose === 'round',
      scope: purpose === 'round' && data.followUp ? `pull-${data.followUp.pullNumber}` : undefined,
      log: (msg, fields) => log.info(fields ?? {}, msg),
    };
  } catch (err) {
    log.warn({ err }, 'no set-up snapshot key; the set-up runs');
    return undefined;
  }
}
