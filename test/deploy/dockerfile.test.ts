import { existsSync } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import { ROOT, parseDockerfile, read, type Stage } from './files.js';

const { args, stages } = parseDockerfile(read('Dockerfile'));
const byName = new Map(stages.filter((s) => s.name).map((s) => [s.name!, s]));
const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
const ignore = read('.dockerignore')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));
const ignored = picomatch(
  ignore.flatMap((p) => [p, `${p}/**`]),
  { dot: true },
);

/** A stage and the stages it builds on (`FROM deps AS build`), nearest first. */
function lineage(stage: Stage): Stage[] {
  const chain = [stage];
  let s = stage;
  while (byName.has(s.from)) {
    s = byName.get(s.from)!;
    chain.push(s);
  }
  return chain;
}

/** The user a stage's final image runs as: its last USER, or an ancestor stage's, or root. */
function effectiveUser(stage: Stage): string {
  for (const s of lineage(stage)) {
    const users = s.instructions.filter((i) => i.op === 'USER');
    if (users.length) return users[users.length - 1].args;
  }
  return 'root';
}

const runs = (stage: Stage) =>
  lineage(stage).flatMap((s) => s.instructions.filter((i) => i.op === 'RUN').map((i) => i.args));

function jsonArray(text: string): string[] {
  const v = JSON.parse(text) as unknown;
  if (!Array.isArray(v)) throw new Error(`not an exec-form array: ${text}`);
  return v as string[];
}

describe('Dockerfile', () => {
  it('has the app, runner and runner-cuda targets and the deps -> build stages', () => {
    for (const name of ['deps', 'build', 'prod-deps', 'app', 'runner', 'runner-cuda'])
      expect(byName.has(name)).toBe(true);
    expect(byName.get('build')!.from).toBe('deps');
    // Every external base image has an explicit tag (never an implicit :latest).
    for (const s of stages.filter((st) => !byName.has(st.from))) expect(s.from).toMatch(/^[\w./-]+:[\w.-]+$/);
    expect(args.NODE_VERSION).toMatch(/^20\./);
  });

  it('runs every runtime target as a non-root user', () => {
    for (const name of ['app', 'runner', 'runner-cuda']) {
      const user = effectiveUser(byName.get(name)!);
      expect(user).not.toMatch(/^(root|0)(:|$)/);
    }
  });

  it('builds with the commands package.json defines', () => {
    const build = runs(byName.get('build')!).join('\n');
    expect(build).toContain('npm ci');
    const scripts = [...build.matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1]);
    expect(scripts).toContain('build');
    for (const s of scripts) expect(pkg.scripts[s]).toBeDefined();
    // The compiler's inputs are in the image: the tsconfig files and every directory the build config includes.
    const copied = byName
      .get('build')!
      .instructions.filter((i) => i.op === 'COPY')
      .map((i) => i.args.split(/\s+/)[0]);
    const buildTsconfig = JSON.parse(read('tsconfig.build.json')) as { include: string[] };
    for (const dir of buildTsconfig.include) expect(copied).toContain(dir);
    const project = /-p\s+(\S+)/.exec(pkg.scripts.build)?.[1] ?? 'tsconfig.json';
    expect(
      byName.get('build')!.instructions.some((i) => i.op === 'COPY' && i.args.split(/\s+/).includes(project)),
    ).toBe(true);
    // The CUDA provider is fetched explicitly; everywhere else the install script is skipped.
    expect(read('Dockerfile')).toContain('ONNXRUNTIME_NODE_INSTALL=skip');
    expect(runs(byName.get('prod-deps-cuda')!).join('\n')).toContain('ONNXRUNTIME_NODE_INSTALL=cuda12');
  });

  it('copies only files that exist and that .dockerignore lets into the build context', () => {
    for (const s of stages) {
      for (const i of s.instructions.filter(
        (x) => (x.op === 'COPY' || x.op === 'ADD') && !x.args.startsWith('--from'),
      )) {
        const parts = i.args.split(/\s+/).filter((p) => !p.startsWith('--'));
        for (const src of parts.slice(0, -1)) {
          expect({ line: i.line, src, exists: existsSync(path.join(ROOT, src)) }).toEqual({
            line: i.line,
            src,
            exists: true,
          });
          expect({ line: i.line, src, ignored: ignored(src) }).toEqual({ line: i.line, src, ignored: false });
        }
      }
    }
  });

  it('starts compiled entry points whose sources exist, and the build stage checks they were emitted', () => {
    const buildRuns = runs(byName.get('build')!).join('\n');
    for (const name of ['app', 'runner', 'runner-cuda']) {
      const cmd = byName
        .get(name)!
        .instructions.filter((i) => i.op === 'CMD')
        .pop();
      expect(cmd).toBeDefined();
      const argv = jsonArray(cmd!.args);
      expect(argv[0]).toBe('node');
      const entry = argv[1];
      expect(entry).toMatch(/^dist\/.*\.js$/);
      const source = entry.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      expect({ entry, sourceExists: existsSync(path.join(ROOT, source)) }).toEqual({ entry, sourceExists: true });
      expect(buildRuns).toContain(`test -f ${entry}`);
    }
  });

  it('ships the in-sandbox programs the code reads at run time beside its modules', () => {
    const buildRuns = runs(byName.get('build')!).join('\n');
    const programs = [
      'src/leaf/sandboxTool.py',
      'src/sandbox/docker/init.py',
      'src/sandbox/docker/sweep.sh',
      'src/sandbox/docker/exec-wrapper.sh',
    ];
    for (const f of programs) {
      expect({ f, exists: existsSync(path.join(ROOT, f)), ignored: ignored(f) }).toEqual({
        f,
        exists: true,
        ignored: false,
      });
      expect(pkg.scripts.build).toContain(`'${f}'`);
      expect(buildRuns).toContain(`test -f dist/${f}`);
    }
  });

  it('keeps secrets and local state out of the build context', () => {
    for (const f of [
      '.env',
      'github-app.private-key.pem',
      'node_modules/x',
      '.git/config',
      'dist/x.js',
      '.frognano/cache/a',
    ]) {
      expect({ f, ignored: ignored(f) }).toEqual({ f, ignored: true });
    }
    for (const f of ['package.json', 'package-lock.json', 'app.yml', 'src/app/main.ts', 'runner/main.ts']) {
      expect({ f, ignored: ignored(f) }).toEqual({ f, ignored: false });
    }
  });
});
