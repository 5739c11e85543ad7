import { describe, expect, test } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkSettings, readSetting, SETTINGS, SettingError } from '../../src/util/settings.js';

/** The one line a setting that does not parse ends the process with. */
function rejectionOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    if (err instanceof SettingError) return err.message;
    throw err;
  }
  throw new Error('accepted');
}

describe('the settings table', () => {
  test('FROGNANO_FAIR_SHARE=maybe is refused, naming the variable and the accepted values', () => {
    expect(rejectionOf(() => readSetting({ FROGNANO_FAIR_SHARE: 'maybe' }, 'FROGNANO_FAIR_SHARE'))).toBe(
      'FROGNANO_FAIR_SHARE=maybe is not accepted: expected on, off',
    );
    expect(readSetting({ FROGNANO_FAIR_SHARE: ' OFF ' }, 'FROGNANO_FAIR_SHARE')).toBe('off');
    // Empty means unset, as in a manifest's `FOO=`.
    expect(readSetting({ FROGNANO_FAIR_SHARE: '' }, 'FROGNANO_FAIR_SHARE')).toBeUndefined();
  });

  test('a missing FROGNANO_QUOTAS_FILE names the variable, the path and what to do', () => {
    expect(rejectionOf(() => checkSettings({ FROGNANO_QUOTAS_FILE: '/nonexistent/quotas.yaml' }, 'app'))).toBe(
      'FROGNANO_QUOTAS_FILE=/nonexistent/quotas.yaml is not accepted: expected the path of an existing YAML quotas ' +
        'file; unset it for no quotas (docs/operating-at-scale.md#quotas)',
    );
    const dir = mkdtempSync(join(tmpdir(), 'fn-settings-'));
    try {
      writeFileSync(join(dir, 'q.yaml'), '{}\n');
      expect(readSetting({ FROGNANO_QUOTAS_FILE: join(dir, 'q.yaml') }, 'FROGNANO_QUOTAS_FILE')).toBe(
        join(dir, 'q.yaml'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('numbers: range, whole numbers and no trailing junk', () => {
    const bad = (name: keyof typeof SETTINGS, v: string) => rejectionOf(() => readSetting({ [name]: v }, name));
    expect(bad('FROGNANO_CONCURRENCY', '65')).toBe(
      'FROGNANO_CONCURRENCY=65 is not accepted: expected a whole number from 1 to 64',
    );
    expect(bad('FROGNANO_CONCURRENCY', '2x')).toContain('FROGNANO_CONCURRENCY=2x');
    expect(bad('FROGNANO_TOP_P', '0')).toBe('FROGNANO_TOP_P=0 is not accepted: expected a number above 0, at most 1');
    expect(bad('FROGNANO_MODEL_SLOTS', '1.5')).toContain('expected a whole number 1 or more');
    expect(readSetting({ FROGNANO_SANDBOX_CPUS: '0.5' }, 'FROGNANO_SANDBOX_CPUS')).toBe(0.5);
  });

  test('a secret is never repeated in the message', () => {
    const msg = rejectionOf(() => readSetting({ PRIVATE_KEY: 'hunter2-not-a-key' }, 'PRIVATE_KEY'));
    expect(msg).toBe('PRIVATE_KEY (value not shown) is not accepted: expected a PEM private key (newlines as \\n)');
    expect(msg).not.toContain('hunter2');
  });

  test('each program checks only what it reads', () => {
    // The runner's concurrency is no business of the CLI; the sandbox is the business of both.
    expect(() => checkSettings({ FROGNANO_CONCURRENCY: 'lots' }, 'cli')).not.toThrow();
    expect(() => checkSettings({ FROGNANO_CONCURRENCY: 'lots' }, 'runner')).toThrow(SettingError);
    expect(() => checkSettings({ FROGNANO_SANDBOX: 'vm' }, 'cli')).toThrow('expected docker, bwrap, local, auto');
  });

  test('every default parses with its own parser (where the default is a value, not words)', () => {
    const refused = Object.entries(SETTINGS).filter(([, spec]) => {
      const d = (spec as { default?: string }).default;
      if (d === undefined || /[ (]/.test(d) || spec.parser.accepts.includes('existing')) return false;
      try {
        spec.parser.parse(d);
        return false;
      } catch {
        return true;
      }
    });
    expect(refused.map(([name]) => name)).toEqual([]);
  });
});

describe('docs/configuration.md and the table', () => {
  const doc = readFileSync('docs/configuration.md', 'utf8');

  test('every setting in the table is documented', () => {
    const missing = Object.keys(SETTINGS).filter((name) => !doc.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  test("every variable in the doc's tables is in the table", () => {
    const rows = doc.split('\n').filter((l) => l.startsWith('| `'));
    const named = rows.flatMap((r) => [...r.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
    expect(named.length).toBeGreaterThan(80);
    expect(named.filter((n) => !(n in SETTINGS))).toEqual([]);
  });

  test('every closed set of accepted values is spelled out in its row', () => {
    const rows = doc.split('\n').filter((l) => l.startsWith('| `'));
    for (const [name, spec] of Object.entries(SETTINGS)) {
      if (!/^[a-z0-9]+(, [a-z0-9]+)+$/.test(spec.parser.accepts)) continue;
      const row = rows.find((r) => r.split('|')[1]!.includes(`\`${name}\``)) ?? '';
      const missing = spec.parser.accepts.split(', ').filter((v) => !row.includes(`\`${v}\``));
      expect({ name, missing }).toEqual({ name, missing: [] });
    }
  });
});
