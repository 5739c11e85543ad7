import type { Redis } from 'ioredis';
import { botKey } from '../queue/keys.js';
import { RedisBaseResultCache, verifyChange } from '../verify/index.js';
import type { RunnerContext } from './types.js';

/**
 * The verifier a runner gives every round (the verify step, src/runner/verifyStep.ts): verifyChange, with base
 * results cached in the runner's Redis under the bot's key prefix, so follow-up, CI-fix and retry rounds on one base
 * commit measure the base once across the whole fleet.
 */
export function runnerVerifier(redis: Redis): Pick<RunnerContext, 'verifyChange' | 'verifyCache'> {
  return {
    verifyChange,
    verifyCache: new RedisBaseResultCache(redis, { prefix: `${botKey('verify', 'base')}:` }),
  };
}
