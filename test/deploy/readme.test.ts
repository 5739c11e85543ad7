import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT, read } from './files.js';

/** FROGNANO_* names in the code that reads settings (help text is documentation, not a reader). */
function namesInCode(): Map<string, string> {
  const where = new Map<string, string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (/\.(ts|sh|js|mjs)$/.test(e.name) && rel !== path.join('src', 'cli', 'help.ts')) {
        for (const m of read(rel).matchAll(/\bFROGNANO_[A-Z0-9_]*[A-Z0-9]\b/g)) if (!where.has(m[0])) where.set(m[0], rel);
      }
    }
  };
  for (const d of ['src', 'runner', 'scripts', 'bin']) walk(d);
  return where;
}

const readme = read('README.md');
const documented = new Set([...readme.matchAll(/\bFROGNANO_[A-Z0-9_]*[A-Z0-9]\b/g)].map((m) => m[0]));

describe('README', () => {
  it('starts with the commands to run and test the project', () => {
    const lines = readme.split('\n');
    expect(lines[0]).toBe('# frognano-bot');
    const fence = readme.slice(readme.indexOf('```'), readme.indexOf('```', readme.indexOf('```') + 3));
    expect(fence).toContain('npm start');
    expect(fence).toContain('npm test');
  });

  it('documents every FROGNANO_* setting the code reads', () => {
    const missing = [...namesInCode()].filter(([name]) => !documented.has(name)).map(([n, f]) => `${n} (read in ${f})`);
    expect(missing).toEqual([]);
  });

  it('documents no FROGNANO_* setting the code does not read', () => {
    const code = namesInCode();
    expect([...documented].filter((n) => !code.has(n))).toEqual([]);
  });

  it('has the operator sections', () => {
    for (const h of ['How it works', 'Quick start', 'Running a runner', 'Configuration reference', 'Security model', 'Observability', 'Deployment', 'Troubleshooting']) {
      expect(readme).toMatch(new RegExp(`^## ${h}`, 'm'));
    }
  });
});
