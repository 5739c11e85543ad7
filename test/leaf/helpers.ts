import { execFileSync } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** git for test fixtures: no user/system config, fixed identity. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 'Test',
      GIT_AUTHOR_EMAIL: 'test@example.com',
      GIT_COMMITTER_NAME: 'Test',
      GIT_COMMITTER_EMAIL: 'test@example.com',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export async function tempDir(prefix = 'fn-leaf-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

/** A real git repository with the given files committed on `main`. */
export async function makeRepo(files: Record<string, string>): Promise<string> {
  const dir = await tempDir('fn-leaf-repo-');
  git(dir, 'init', '-q', '-b', 'main');
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial');
  return dir;
}

export async function removeDir(dir: string | undefined): Promise<void> {
  if (dir) await rm(dir, { recursive: true, force: true });
}

export const SAMPLE_FILES: Record<string, string> = {
  'README.md': '# calc\n',
  'package.json': '{"name":"calc"}\n',
  'src/math.js': 'export function add(a, b) {\n  return a - b;\n}\n',
  'src/util/strings.js': 'export const upper = (s) => s.toUpperCase();\n',
  'test/math.test.sh': '#!/bin/sh\ngrep -q "a + b" src/math.js\n',
};

/**
 * LocalSandbox runs `bash -lc` with the runner's HOME, so the host's login scripts (~/.profile, pyenv
 * init ...) would run in every test command, slowly or not at all. Tests give it an empty HOME instead.
 */
export function isolateHome(): void {
  const saved = process.env.HOME;
  let home: string | undefined;
  beforeAll(async () => {
    home = await tempDir('fn-leaf-home-');
    process.env.HOME = home;
  });
  afterAll(async () => {
    process.env.HOME = saved;
    await removeDir(home);
  });
}
