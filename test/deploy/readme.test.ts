import { existsSync, readdirSync } from 'node:fs';
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
        for (const m of read(rel).matchAll(/\bFROGNANO_[A-Z0-9_]*[A-Z0-9]\b/g))
          if (!where.has(m[0])) where.set(m[0], rel);
      }
    }
  };
  for (const d of ['src', 'runner', 'scripts', 'bin']) walk(d);
  return where;
}

const readme = read('README.md');
/** The README names the settings most setups need; docs/configuration.md, which it links, names every one. */
const reference = `${readme}\n${read('docs/configuration.md')}`;
const documented = new Set([...reference.matchAll(/\bFROGNANO_[A-Z0-9_]*[A-Z0-9]\b/g)].map((m) => m[0]));

describe('README', () => {
  it('starts with the commands to run and test the project', () => {
    const lines = readme.split('\n');
    expect(lines[0]).toBe('# frognano-bot');
    const fence = readme.slice(readme.indexOf('```'), readme.indexOf('```', readme.indexOf('```') + 3));
    expect(fence).toContain('npm start');
    expect(fence).toContain('npm test');
  });

  it('documents every FROGNANO_* setting the code reads (with docs/configuration.md)', () => {
    const missing = [...namesInCode()].filter(([name]) => !documented.has(name)).map(([n, f]) => `${n} (read in ${f})`);
    expect(missing).toEqual([]);
  });

  it('documents no FROGNANO_* setting the code does not read', () => {
    const code = namesInCode();
    expect([...documented].filter((n) => !code.has(n))).toEqual([]);
  });

  it('has the operator sections', () => {
    for (const h of [
      'How it works',
      'Quick start',
      'Running a runner',
      'Configuration reference',
      'Security model',
      'Observability',
      'Deployment',
      'Troubleshooting',
    ]) {
      expect(readme).toMatch(new RegExp(`^## ${h}`, 'm'));
    }
  });

  it('gives exactly the test command that .ci/run runs', () => {
    const ci = read('.ci/run')
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#'));
    expect(ci[ci.length - 1]).toBe('npm ci && npm test');
    expect(readme).toMatch(/^npm ci && npm test\b/m);
  });
});

/** Markdown files whose relative links must resolve: the README, CONTRIBUTING.md, docs/ and bench/README.md. */
const docs = readdirSync(path.join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const markdown = ['README.md', 'CONTRIBUTING.md', 'bench/README.md', ...docs];

describe('the documentation beside the README', () => {
  it('is linked from the README, and every relative link resolves to a file', () => {
    for (const page of [...docs, 'CONTRIBUTING.md']) expect(readme).toContain(`](${page}`);
    const broken: string[] = [];
    for (const file of markdown) {
      for (const m of read(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1].split('#')[0];
        if (!target || /^[a-z]+:/.test(target)) continue;
        if (!existsSync(path.join(ROOT, path.dirname(file), target))) broken.push(`${file}: ${m[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('CONTRIBUTING.md has the test prerequisites and the lint and format commands', () => {
    const text = read('CONTRIBUTING.md');
    for (const s of [
      'npm ci && npm test',
      'redis-server',
      'bubblewrap',
      '/usr/bin/python3',
      'build-sandbox-image.sh',
      'npm run lint',
      'npm run format',
    ]) {
      expect(text).toContain(s);
    }
  });

  it('docs/architecture.md has the round pipeline and every layer of the lint config', () => {
    const text = read('docs/architecture.md');
    expect(text).toContain('clone → sandbox → Leaf run → judge → apply and check → publish → report');
    for (const m of [
      'round.ts',
      'roundSteps.ts',
      'roundVariant.ts',
      'firstAttempt.ts',
      'followUp.ts',
      'processJob.ts',
    ]) {
      expect({ m, inDocs: text.includes(`\`${m}\``) }).toEqual({ m, inDocs: true });
      expect(existsSync(path.join(ROOT, 'src/runner', m))).toBe(true);
    }
    const units = [...read('.dependency-cruiser.cjs').matchAll(/'((?:src\/)?[a-z]+\/)'/g)].map((m) => m[1]);
    expect(units.length).toBeGreaterThanOrEqual(10);
    for (const u of units) expect({ u, inDocs: text.includes(`\`${u}\``) }).toEqual({ u, inDocs: true });
  });
});
