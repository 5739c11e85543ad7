import { createHash } from 'node:crypto';
import type { VerifyOptions } from './types.js';

/**
 * Bumped whenever what a base side measures or how it is stored changes (the wrapper, the reader, the parsers'
 * output), so an older runner's cached base is never graded by a newer verifier.
 */
export const VERIFIER_VERSION = 1;

/**
 * The base-result cache key: everything the base's result depends on. The environment is the image's ID (not its
 * tag) on docker and the host identity on bwrap (VerifyOptions.environmentKey).
 */
export function baseCacheKey(
  o: Pick<
    VerifyOptions,
    'repository' | 'baseCommit' | 'setupCommands' | 'testCommands' | 'setupNetwork' | 'environmentKey' | 'reportGlobs'
  >,
): string {
  const identity = [
    VERIFIER_VERSION,
    o.repository,
    o.baseCommit,
    o.setupCommands,
    o.testCommands,
    o.setupNetwork,
    o.environmentKey,
    [...o.reportGlobs].sort(),
  ];
  return `v${VERIFIER_VERSION}:${createHash('sha256').update(JSON.stringify(identity)).digest('hex')}`;
}
