import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { HELP } from '../../src/cli/help.js';
import { llamaServerLines, sglangLines, vllmServeLines } from '../../src/cli/model/serving.js';
import { SETTINGS } from '../../src/util/settings.js';
import { ROOT, read } from './files.js';

/** The project's Markdown a user reads: README.md, docs/, deploy/ and every README under src/. */
function markdownFiles(): string[] {
  const out = ['README.md', 'CONTRIBUTING.md', 'deploy/README.md', 'bench/README.md'];
  for (const f of readdirSync(path.join(ROOT, 'docs'))) if (f.endsWith('.md')) out.push(`docs/${f}`);
  const walk = (dir: string) => {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      if (e.isDirectory()) walk(`${dir}/${e.name}`);
      else if (e.name === 'README.md') out.push(`${dir}/${e.name}`);
    }
  };
  walk('src');
  return out.filter((f) => existsSync(path.join(ROOT, f)));
}

describe('the docs', () => {
  it('cite no DESIGN.md (it is not in the repository) and every relative link resolves', () => {
    const dead: string[] = [];
    for (const file of markdownFiles()) {
      const text = read(file);
      if (text.includes('DESIGN.md')) dead.push(`${file}: DESIGN.md`);
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!.split('#')[0]!;
        if (!target || /^[a-z]+:/.test(target)) continue;
        if (!existsSync(path.resolve(ROOT, path.dirname(file), target))) dead.push(`${file}: ${m[1]}`);
      }
    }
    expect(dead).toEqual([]);
  });

  it('README: a webhook with a bad signature gets 400 (what Probot answers), not 401', () => {
    expect(read('README.md')).not.toMatch(/401/);
  });

  it("README's settings table says where each is read, as the settings table does", () => {
    const readme = read('README.md');
    const section = readme.slice(readme.indexOf('## Configuration reference'));
    const rows = section.split('\n').filter((l) => l.startsWith('| `'));
    const wrong: string[] = [];
    for (const row of rows) {
      const [names, where] = [row.split('|')[1]!, row.split('|')[2]!.trim()];
      for (const [, name] of names.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) {
        const programs = (SETTINGS as Record<string, { programs: readonly string[] }>)[name!]?.programs ?? [];
        const said = where.split(/,\s*/).map((w) => (w === 'runners' ? 'runner' : w));
        const read = programs.filter((p) => p !== 'cli');
        if (said.sort().join() !== [...read].sort().join())
          wrong.push(`${name}: README says ${where}, read by ${read}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('docs/cli.md names every command and every option of `frognano --help`', () => {
    const doc = read('docs/cli.md');
    const missing: string[] = [];
    for (const [command, text] of Object.entries(HELP)) {
      if (!doc.includes(`frognano ${command}`)) missing.push(command);
      for (const [flag] of text.matchAll(/--[a-z][a-z0-9-]+/g))
        if (!new RegExp(`${flag}(?![a-z0-9-])`).test(doc)) missing.push(`${command} ${flag}`);
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  it('README and docs/inference.md show the serving lines `model pull` prints (one source: src/cli/model/serving.ts)', () => {
    const dir = '/models/FrogNano-4B-2609';
    const vllm = vllmServeLines(dir).join('\n');
    const llama = llamaServerLines('frognano-4b-q4_k_m.gguf', `${dir}/chat_template.jinja`).join('\n');
    for (const file of ['README.md', 'docs/inference.md']) {
      expect(read(file)).toContain(vllm);
      expect(read(file)).toContain(llama);
    }
    expect(read('docs/inference.md')).toContain(sglangLines(dir).join('\n'));
    // Upstream Leaf's context budget (frognano/configs/eval/swebench-verified.yaml: max_context_tokens 65536).
    expect(vllm).toContain('--max-model-len 65536');
    expect(vllm).toContain('--tool-call-parser qwen3_coder --reasoning-parser qwen3');
  });
});
