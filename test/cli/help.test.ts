import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOCTOR_HELP, HELP, MAIN_HELP } from '../../src/cli/help.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const HELP_FILE = path.join('src', 'cli', 'help.ts');

/**
 * Environment variables the code reads: `env.NAME`, `env['NAME']`, or a quoted 'NAME' with an underscore (the
 * name tables of inference/index.ts, sandbox/config.ts and runner/config.ts). Comments and prose do not count,
 * and neither does the help file itself, which is what is being checked.
 */
function envNamesRead(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (/\.(ts|js|mjs)$/.test(e.name) && rel !== HELP_FILE) {
        const text = readFileSync(path.join(ROOT, rel), 'utf8');
        for (const m of text.matchAll(
          /\benv\.([A-Z][A-Z0-9_]*)\b|\benv\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\]|['"]([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])['"]/g,
        )) {
          names.add(m[1] ?? m[2] ?? m[3]);
        }
      }
    }
  };
  for (const d of ['src', 'runner', 'bin']) walk(d);
  return names;
}

const read = envNamesRead();

/**
 * `FROGNANO_OPENAI_*` / `FROGNANO_SANDBOX*` stand for a family of settings: at least two read names must start
 * with the prefix (a "family" of one, like the old `FROGNANO_MODEL_*`, sends users looking for names that do not exist).
 */
const isRead = (name: string): boolean =>
  name.endsWith('*') ? [...read].filter((r) => r.startsWith(name.slice(0, -1))).length >= 2 : read.has(name);

const allHelp = [MAIN_HELP, ...Object.values(HELP)].join('\n');

describe('CLI help names only environment variables the code reads', () => {
  test('the reader finds the settings it should (guards the scan itself)', () => {
    for (const n of [
      'FROGNANO_OPENAI_BASE_URL',
      'FROGNANO_SANDBOX',
      'FROGNANO_MODEL_DIR',
      'REDIS_URL',
      'APP_ID',
      'GITHUB_TOKEN',
    ]) {
      expect(read).toContain(n);
    }
    expect(isRead('FROGNANO_ENDPOINT')).toBe(false);
    expect(isRead('FROGNANO_SANDBOX_*')).toBe(true);
    // FROGNANO_MODEL_* became a family (MODEL_DIR, MODEL_SLOTS); FROGNANO_QUOTAS_FILE is still a family of one.
    expect(isRead('FROGNANO_MODEL_*')).toBe(true);
    expect(isRead('FROGNANO_QUOTAS_*')).toBe(false);
  });

  test('every NAME_WITH_UNDERSCORES in the help texts is read', () => {
    const named = new Set([...allHelp.matchAll(/\b[A-Z][A-Z0-9]*_[A-Z0-9_]*(?:[A-Z0-9]\b|\*)/g)].map((m) => m[0]));
    expect(named.size).toBeGreaterThan(5);
    expect([...named].filter((n) => !isRead(n))).toEqual([]);
  });

  test("every name in doctor's 'Environment read' list is read", () => {
    const para = /Environment read:([\s\S]*?)\n\n/.exec(DOCTOR_HELP)?.[1];
    expect(para).toBeDefined();
    // Separators are commas, slashes, "and"/"or"; what is left must each be an environment variable (or family).
    const listed = para!.split(/[\s,./]+/).filter((w) => w && !['and', 'or'].includes(w));
    expect(listed.length).toBeGreaterThan(5);
    expect(listed.filter((n) => !/^[A-Z][A-Z0-9_]*\*?$/.test(n) || !isRead(n))).toEqual([]);
  });

  test('FROGNANO_* names in the CLI messages (hints included) are read', () => {
    const unread: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
        const rel = path.join(dir, e.name);
        if (e.isDirectory()) walk(rel);
        else if (e.name.endsWith('.ts')) {
          for (const m of readFileSync(path.join(ROOT, rel), 'utf8').matchAll(
            /\bFROGNANO_[A-Z0-9_]*(?:[A-Z0-9]\b|\*)/g,
          )) {
            if (!isRead(m[0])) unread.push(`${m[0]} (${rel})`);
          }
        }
      }
    };
    walk(path.join('src', 'cli'));
    expect(unread).toEqual([]);
  });
});
