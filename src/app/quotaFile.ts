import { readFileSync, statSync, type Stats } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';
import { readSetting } from '../util/settings.js';
import { QuotasFileSchema, type QuotasConfig } from '../queue/quotas/schema.js';

/** The operator's quotas file, read at start and again whenever it changes (docs/operating-at-scale.md, "Quotas"). */

/** FROGNANO_QUOTAS_FILE, an existing file (SettingError naming the variable otherwise); undefined: no quotas. */
export function quotasFileFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return readSetting(env, 'FROGNANO_QUOTAS_FILE');
}

/** Parses the file's text; an unknown key, a bad value or bad YAML throws an error that names the file. */
export function parseQuotasFile(text: string, path: string): QuotasConfig {
  let raw: unknown;
  try {
    raw = parse(text) ?? {};
  } catch (err) {
    throw new Error(`${path}: not valid YAML: ${(err as Error).message}`);
  }
  const parsed = QuotasFileSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`${path}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

export interface QuotasFileWatch {
  /** The last version that parsed (a broken edit keeps the one before it). */
  current(): QuotasConfig;
  stop(): void;
}

/**
 * Reads the file now (throwing if it is missing or wrong: the app should not start with quotas it cannot read),
 * then polls its stat: fs.watch misses the symlink swap a Kubernetes ConfigMap update does. The baseline is the stat
 * taken just before the first read (fs.watchFile takes its own later, so an edit right after start was missed).
 */
export function watchQuotasFile(
  path: string,
  o: { onChange?: (cfg: QuotasConfig) => void; onError?: (err: Error) => void; intervalMs?: number } = {},
): QuotasFileWatch {
  let seen = statSync(path);
  let cfg = parseQuotasFile(readFileSync(path, 'utf8'), path);
  const poll = () => {
    let now: Stats;
    try {
      now = statSync(path);
    } catch (err) {
      o.onError?.(err as Error);
      return;
    }
    if (sameFile(now, seen)) return;
    try {
      const text = readFileSync(path, 'utf8');
      // An empty read while the app runs is most likely a write in progress (truncate, then write): look again.
      if (!text.trim()) return;
      seen = now;
      cfg = parseQuotasFile(text, path);
      o.onChange?.(cfg);
    } catch (err) {
      seen = now;
      o.onError?.(err as Error);
    }
  };
  const timer = setInterval(poll, o.intervalMs ?? 2000);
  timer.unref();
  return { current: () => cfg, stop: () => clearInterval(timer) };
}

function sameFile(a: Stats, b: Stats): boolean {
  return a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.size === b.size && a.ino === b.ino;
}
