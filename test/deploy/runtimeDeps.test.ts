import { builtinModules } from 'node:module';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ROOT, read } from './files.js';

const pkg = JSON.parse(read('package.json')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

function tsFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(rel);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** Bare module names the compiled JavaScript of a file loads (type-only imports are gone after compilation). */
function runtimeImports(rel: string): string[] {
  const js = ts.transpileModule(read(rel), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }, // the package is ESM
    fileName: rel,
  }).outputText;
  const specs = [
    ...js.matchAll(/^\s*(?:import|export)\s[^'";]*?from\s*['"]([^'"]+)['"]/gm),
    ...js.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
    ...js.matchAll(/\b(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]);
  return specs.filter((s) => !s.startsWith('.') && !s.startsWith('node:'));
}

const packageName = (spec: string) =>
  spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];

describe('runtime images', () => {
  it('sees value imports and ignores type-only ones', () => {
    expect(runtimeImports('src/ops/metrics.ts')).toEqual(['prom-client']);
    // runnerRegistry imports ioredis for its types only: nothing of it is loaded at run time.
    expect(runtimeImports('src/ops/runnerRegistry.ts')).toEqual([]);
  });

  it('the code that runs in the images (src/, runner/) loads only production dependencies', () => {
    const files = [...tsFiles('src'), ...tsFiles('runner')];
    expect(files.length).toBeGreaterThan(20);
    const missing: string[] = [];
    for (const f of files) {
      for (const spec of runtimeImports(f)) {
        const name = packageName(spec);
        if (builtinModules.includes(name)) continue;
        if (!pkg.dependencies[name])
          missing.push(
            `${f} imports ${spec}${pkg.devDependencies[name] ? ' (a devDependency: absent after npm ci --omit=dev)' : ''}`,
          );
      }
    }
    expect(missing).toEqual([]);
  });
});
