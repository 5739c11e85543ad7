import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { waitFor } from '../support/waitFor.js';
import os from 'node:os';
import path from 'node:path';
import { JobWorkspace, resolveWorkspaceDir, type JobWorkspaceLimits } from '../../src/sandbox/jobWorkspace.js';

const LIMITS: JobWorkspaceLimits = {
  user: '1000:1000',
  jobTimeoutMs: 60_000,
  workspaceMb: 1,
  workspaceFiles: 10,
  workspaceCheckMs: 100,
};

describe('JobWorkspace', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'fn-jobws-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a workspace that is not a directory, and resolves the real path of one that is', async () => {
    await writeFile(path.join(dir, 'f'), 'x');
    await expect(resolveWorkspaceDir(path.join(dir, 'f'))).rejects.toThrow(/is not a directory/);
    await expect(resolveWorkspaceDir(path.join(dir, 'missing'))).rejects.toThrow(/is not a directory/);
    expect(await resolveWorkspaceDir(`${dir}/.`)).toBe(dir);
  });

  it('refuses use past the job time limit, and tells whoever waits for it', async () => {
    const job = await JobWorkspace.claim(dir, { ...LIMITS, jobTimeoutMs: 150 });
    let told = 0;
    job.whenExpired(() => told++);
    expect(() => job.assertUsable()).not.toThrow();
    await waitFor('the 150 ms job time limit to expire the workspace', () => job.expired, 5000);
    expect(job.expired).toBe(true);
    expect(told).toBe(1);
    expect(() => job.assertUsable()).toThrow('sandbox stopped: the job time limit of 0s was reached');
    await job.close(async () => {});
  });

  it('refuses use when broken or over budget, each with its own reason', async () => {
    const job = await JobWorkspace.claim(dir, LIMITS);
    job.markBroken('processes survived');
    job.markBroken('a later reason');
    expect(() => job.assertUsable()).toThrow('sandbox stopped: processes survived');
    await job.close(async () => {});

    const job2 = await JobWorkspace.claim(dir, LIMITS);
    job2.measureWith(async () => ({ kib: 2048, files: 1 }));
    await job2.watch(() => {})();
    expect(job2.overBudget?.limit).toBe('workspace_disk');
    expect(() => job2.assertUsable()).toThrow(/workspace budget of 1 MiB/);
    await job2.close(async () => {});
  });

  it('closes once: the teardown runs once, the workspace goes back to its owner even when it fails', async () => {
    const before = await stat(dir);
    const job = await JobWorkspace.claim(dir, LIMITS);
    let stops = 0;
    const stop = async () => {
      stops++;
      throw new Error('teardown failed');
    };
    await expect(job.close(stop)).rejects.toThrow('teardown failed');
    await expect(job.close(stop)).rejects.toThrow('teardown failed');
    expect(stops).toBe(1);
    expect(job.closed).toBe(true);
    expect(() => job.assertUsable()).toThrow('sandbox is closed');
    const after = await stat(dir);
    expect([after.uid, after.gid]).toEqual([before.uid, before.gid]);
  });
});
