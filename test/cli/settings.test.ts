import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanEnv, ROOT } from './helpers.js';

/** `npm run frognano -- ARGS` typed in `cwd` (npm runs the script from the package root and sets INIT_CWD). */
function npmFrognano(args: string[], cwd: string, env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'npm',
      ['--prefix', ROOT, 'run', '--silent', 'frognano', '--', ...args],
      { cwd, env: cleanEnv({ INIT_CWD: undefined, npm_lifecycle_event: undefined, ...env }), timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('frognano reads .env and checks its settings like the app and the runner', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fn-cli-settings-'));
    await fs.writeFile(path.join(dir, '.env'), 'FROGNANO_SANDBOX=vm\n');
  });
  afterAll(() => fs.rm(dir, { recursive: true, force: true }));

  test('the .env of the directory the command was typed in; a bad value: exit code 2 and one line', async () => {
    const r = await npmFrognano(['--version'], dir);
    expect({ code: r.code, stderr: r.stderr }).toEqual({
      code: 2,
      stderr: 'frognano: FROGNANO_SANDBOX=vm is not accepted: expected docker, bwrap, local, auto\n',
    });
  }, 60_000);

  test('`npm run frognano -- solve .` solves the directory it was typed in, not the package root', async () => {
    const plain = await fs.mkdtemp(path.join(os.tmpdir(), 'fn-cli-initcwd-'));
    try {
      const replay = path.join(plain, 'replay.json');
      await fs.writeFile(replay, JSON.stringify({ turns: [{ content: 'done' }] }));
      const r = await npmFrognano(['solve', '.', '--issue', 'x', '--replay', replay], plain);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain(`frognano: ${plain} is not a git repository`);
    } finally {
      await fs.rm(plain, { recursive: true, force: true });
    }
  }, 60_000);

  test('the environment wins over .env', async () => {
    const r = await npmFrognano(['--version'], dir, { FROGNANO_SANDBOX: 'bwrap' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^frognano \d/);
  }, 60_000);
});
