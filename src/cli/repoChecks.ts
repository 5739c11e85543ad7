import { loadRepoConfig, RepoConfigError, type RepoConfig } from '../github/repoConfig.js';
import { setupError } from './exitCodes.js';

/** The set-up and test commands of a CLI run, and the repository's `verify` settings they are verified with. */
export interface RepoChecks {
  setupCommands: string[];
  testCommands: string[];
  verify: RepoConfig['verify'];
  /** Whether `.github/frognano.yml` was there (its commands are used where no flag gives them). */
  configFound: boolean;
}

/**
 * The commands as the runner would take them from the repository's `.github/frognano.yml` (read from the
 * working tree, zod-checked by parseRepoConfig), each list replaced by the command line's `--setup` / `--test`
 * when given: the person at the terminal overrides the file, as in a round the file is the only source.
 */
export async function repoChecks(repoDir: string, flags: { setup?: string[]; test?: string[] }): Promise<RepoChecks> {
  let loaded;
  try {
    loaded = await loadRepoConfig(repoDir);
  } catch (err) {
    if (err instanceof RepoConfigError)
      throw setupError(err.message, 'fix the file, or give the commands with --setup and --test');
    throw err;
  }
  const { config, found } = loaded;
  return {
    setupCommands: flags.setup ?? config.setupCommands,
    testCommands: flags.test ?? config.testCommands,
    verify: config.verify,
    configFound: found,
  };
}
