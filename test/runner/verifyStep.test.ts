import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { parseRepoConfig } from '../../src/github/repoConfig.js';
import { OFF_ON_RUNNER, verifyStep } from '../../src/runner/verifyStep.js';
import type { VerifyOptions } from '../../src/verify/types.js';
import { mixedVerdict } from '../support/verdicts.js';

/** A real clone with a staged change, as applyAndCheck leaves it. */
async function stagedRepo(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fn-verifystep-'));
  const g = (...a: string[]) => execFileSync('git', a, { cwd: dir, encoding: 'utf8' });
  g('init', '-q');
  await fs.writeFile(path.join(dir, 'a.py'), 'x = 1\n');
  g('add', '.');
  g('-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-qm', 'base');
  await fs.writeFile(path.join(dir, 'a.py'), 'x = 2\n');
  g('add', '.');
  return dir;
}

function liveRun(dir: string, ctx: Record<string, unknown>) {
  const updates: unknown[] = [];
  const run = {
    jobId: 'job-1',
    data: { installationId: 7, owner: 'o', repo: 'r', title: 'Fix x', body: 'x should be 2' },
    ctx: { sandbox: { kind: 'bwrap' }, gitTimeoutMs: 30_000, ...ctx },
    signal: new AbortController().signal,
    log: pino({ level: 'silent' }),
    reporter: { update: (p: unknown) => updates.push(p) },
  };
  return {
    run: run as never,
    updates,
    checkout: (yml: string) => ({ config: parseRepoConfig(yml), workDir: dir, instructionsDir: dir }),
  };
}

describe('the verify step', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await stagedRepo();
  });
  afterAll(() => fs.rm(dir, { recursive: true, force: true }));

  it('gives the verifier the base commit and the staged change, and returns its verdict', async () => {
    let seen: VerifyOptions | undefined;
    const verdict = mixedVerdict();
    const { run, updates, checkout } = liveRun(dir, {
      verifyChange: async (o: VerifyOptions) => {
        seen = o;
        o.onProgress?.('base tests');
        return verdict;
      },
    });
    const out = await verifyStep(
      run,
      checkout('testCommands: [pytest -q]\nverify:\n  reports: [junit.xml]\n'),
      {} as never,
    );
    expect(out).toEqual({ state: 'verified', verdict });
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
    expect(seen).toMatchObject({
      repoDir: dir,
      baseCommit: head,
      testCommands: ['pytest -q'],
      reportGlobs: ['junit.xml'],
    });
    expect(seen!.patch).toContain('-x = 1\n+x = 2');
    expect(seen!.repository).toBe('7/o/r');
    expect(updates).toContainEqual({ phase: 'verifying', detail: 'Verifying: base tests' });
  });

  it('says off for FROGNANO_VERIFY=off, verify.enabled: false and no test commands', async () => {
    const never = async () => {
      throw new Error('must not run');
    };
    const off = liveRun(dir, { verifyOff: true, verifyChange: never });
    expect(await verifyStep(off.run, off.checkout('testCommands: [t]\n'), {} as never)).toEqual({
      state: 'off',
      reason: OFF_ON_RUNNER,
    });
    const on = liveRun(dir, { verifyChange: never });
    expect(
      await verifyStep(on.run, on.checkout('testCommands: [t]\nverify:\n  enabled: false\n'), {} as never),
    ).toMatchObject({
      state: 'off',
      reason: expect.stringContaining('`verify.enabled` is false'),
    });
    expect(await verifyStep(on.run, on.checkout(''), {} as never)).toMatchObject({
      state: 'off',
      reason: expect.stringContaining('no test commands'),
    });
  });

  it('a verifier that crashes is "not run" with a public reason, never a pass and never a thrown round', async () => {
    const { run, checkout } = liveRun(dir, {
      verifyChange: async () => {
        throw new Error('ENOENT /var/lib/frognano/secret/path');
      },
    });
    const out = await verifyStep(run, checkout('testCommands: [t]\n'), {} as never);
    expect(out?.state).toBe('not_run');
    expect(out).toMatchObject({ reason: expect.stringContaining('job job-1') });
    expect(JSON.stringify(out)).not.toContain('/var/lib');
  });
});
