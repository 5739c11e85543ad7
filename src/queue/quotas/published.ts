import type { Redis } from 'ioredis';
import { botKey } from '../keys.js';
import { QuotasFileSchema, type QuotasConfig } from './schema.js';

/**
 * The quotas the app read from its file, stored in Redis for the runners: they queue rounds themselves (the next
 * round from waiting asks, a verification repair) and admit them under the same limits. Written at the app's start
 * and on each change of the file; removed when the app runs without a file.
 */
function publishedKey(): string {
  return botKey('quota', 'config');
}

export async function publishQuotas(redis: Redis, cfg: QuotasConfig | null): Promise<void> {
  if (cfg) await redis.set(publishedKey(), JSON.stringify(cfg));
  else await redis.del(publishedKey());
}

/** The quotas the app last stored, or null (none, or unreadable: the app validated them, so that is a bug, thrown). */
export async function readPublishedQuotas(redis: Redis): Promise<QuotasConfig | null> {
  const text = await redis.get(publishedKey());
  if (!text) return null;
  return QuotasFileSchema.parse(JSON.parse(text));
}
