import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { VerifySideSchema } from './sideSchema.js';
import type { BaseResultCache, VerifySide } from './types.js';

/**
 * Base-result caches: Redis for runners (shared by every runner of a deployment), a directory for the CLI. Keys come
 * from baseCacheKey (a hash); a value is a measured base side. What is read back is checked against its shape, so
 * a corrupt or foreign entry is a miss, never a verdict.
 */

function parseSide(text: string | null | undefined): VerifySide | undefined {
  if (!text) return undefined;
  try {
    const r = VerifySideSchema.safeParse(JSON.parse(text));
    return r.success ? (r.data as VerifySide) : undefined;
  } catch {
    return undefined;
  }
}

/** Entries larger than this are not stored (a base with huge per-test lists is measured again instead). */
export const MAX_CACHE_ENTRY_BYTES = 2 * 1024 * 1024;
export const DEFAULT_CACHE_TTL_MS = 7 * 24 * 3600 * 1000;

function serialise(side: VerifySide, maxEntryBytes: number): string | undefined {
  const { cached: _cached, ...stored } = side;
  const text = JSON.stringify(stored);
  return Buffer.byteLength(text) > maxEntryBytes ? undefined : text;
}

export interface RedisCacheOptions {
  prefix?: string;
  ttlMs?: number;
  maxEntryBytes?: number;
  /** Entries kept under this prefix; the oldest are dropped past it. */
  maxEntries?: number;
}

export class RedisBaseResultCache implements BaseResultCache {
  private readonly prefix: string;
  private readonly ttlMs: number;
  private readonly maxEntryBytes: number;
  private readonly maxEntries: number;

  constructor(
    private readonly redis: Redis,
    o: RedisCacheOptions = {},
  ) {
    this.prefix = o.prefix ?? 'frognano:verify:base:';
    this.ttlMs = o.ttlMs ?? DEFAULT_CACHE_TTL_MS;
    this.maxEntryBytes = o.maxEntryBytes ?? MAX_CACHE_ENTRY_BYTES;
    this.maxEntries = o.maxEntries ?? 10_000;
  }

  async get(key: string): Promise<VerifySide | undefined> {
    return parseSide(await this.redis.get(this.prefix + key));
  }

  async set(key: string, side: VerifySide): Promise<void> {
    const text = serialise(side, this.maxEntryBytes);
    if (text === undefined) return;
    const index = `${this.prefix}index`;
    const now = Date.now();
    await this.redis
      .multi()
      .set(this.prefix + key, text, 'PX', this.ttlMs)
      .zadd(index, now, key)
      .zremrangebyscore(index, '-inf', now - this.ttlMs)
      .pexpire(index, this.ttlMs)
      .exec();
    const over = (await this.redis.zcard(index)) - this.maxEntries;
    if (over <= 0) return;
    const oldest = await this.redis.zrange(index, 0, over - 1);
    if (oldest.length === 0) return;
    await this.redis
      .multi()
      .del(...oldest.map((k) => this.prefix + k))
      .zrem(index, ...oldest)
      .exec();
  }
}

export interface FileCacheOptions {
  ttlMs?: number;
  maxEntryBytes?: number;
  maxEntries?: number;
}

/** One JSON file per key in a directory the CLI owns (keys are hashes, so file names are the bot's own). */
export class FileBaseResultCache implements BaseResultCache {
  private readonly ttlMs: number;
  private readonly maxEntryBytes: number;
  private readonly maxEntries: number;

  constructor(
    private readonly dir: string,
    o: FileCacheOptions = {},
  ) {
    this.ttlMs = o.ttlMs ?? DEFAULT_CACHE_TTL_MS;
    this.maxEntryBytes = o.maxEntryBytes ?? MAX_CACHE_ENTRY_BYTES;
    this.maxEntries = o.maxEntries ?? 200;
  }

  private file(key: string): string {
    if (!/^[A-Za-z0-9:_-]{1,128}$/.test(key)) throw new Error('invalid cache key');
    return path.join(this.dir, `${key.replace(/:/g, '_')}.json`);
  }

  async get(key: string): Promise<VerifySide | undefined> {
    const file = this.file(key);
    const st = await fs.stat(file).catch(() => null);
    if (!st?.isFile() || st.size > this.maxEntryBytes) return undefined;
    if (Date.now() - st.mtimeMs > this.ttlMs) {
      await fs.rm(file, { force: true });
      return undefined;
    }
    return parseSide(await fs.readFile(file, 'utf8').catch(() => null));
  }

  async set(key: string, side: VerifySide): Promise<void> {
    const text = serialise(side, this.maxEntryBytes);
    if (text === undefined) return;
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.file(key);
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
    await fs.writeFile(tmp, text, { mode: 0o600 });
    await fs.rename(tmp, file);
    await this.prune();
  }

  private async prune(): Promise<void> {
    const names = (await fs.readdir(this.dir)).filter((n) => n.endsWith('.json'));
    if (names.length <= this.maxEntries) return;
    const dated = await Promise.all(
      names.map(async (n) => ({ n, t: (await fs.stat(path.join(this.dir, n)).catch(() => null))?.mtimeMs ?? 0 })),
    );
    dated.sort((a, b) => a.t - b.t);
    for (const { n } of dated.slice(0, names.length - this.maxEntries))
      await fs.rm(path.join(this.dir, n), { force: true });
  }
}
