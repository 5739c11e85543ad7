import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  applyPatch,
  branchNameFor,
  cloneRepo,
  commitStaged,
  DEFAULT_BOT_IDENTITY,
  git,
  GitError,
  pushBranch,
  stagedNumstat,
} from '../../src/github/git.js';
import { makeBareRemote, gitIn, type BareRemote } from './gitRepo.js';

const TOKEN = 'ghs_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

describe('host git', () => {
  let remote: BareRemote;
  let work: string;
  beforeEach(async () => {
    remote = await makeBareRemote(
      'octo',
      'hello',
      { 'README.md': '# hello\n', 'src/a.txt': 'one\ntwo\n' },
      {
        extraBranches: { develop: { 'DEV.md': 'dev\n' } },
      },
    );
    work = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-gitwork-'));
  });
  afterEach(async () => {
    await remote.cleanup();
    await fs.rm(work, { recursive: true, force: true });
  });

  it('clones the default branch shallowly and keeps the token out of .git/config', async () => {
    const dest = path.join(work, 'clone');
    const res = await cloneRepo({
      owner: 'octo',
      repo: 'hello',
      dest,
      auth: { baseUrl: remote.baseUrl, token: TOKEN },
    });
    expect(res.branch).toBe('main');
    expect(res.headSha).toMatch(/^[0-9a-f]{40}$/);
    expect(await fs.readFile(path.join(dest, 'README.md'), 'utf8')).toBe('# hello\n');
    expect(gitIn(dest, 'rev-parse', '--is-shallow-repository').trim()).toBe('true');
    const cfg = await fs.readFile(path.join(dest, '.git', 'config'), 'utf8');
    expect(cfg).not.toContain(TOKEN);
    expect(cfg).not.toContain('extraheader');
    expect(cfg).toContain(`url = ${remote.baseUrl}/octo/hello.git`);
  });

  it('clones a configured branch', async () => {
    const dest = path.join(work, 'clone');
    const res = await cloneRepo({
      owner: 'octo',
      repo: 'hello',
      dest,
      branch: 'develop',
      auth: { baseUrl: remote.baseUrl },
    });
    expect(res.branch).toBe('develop');
    expect(await fs.readFile(path.join(dest, 'DEV.md'), 'utf8')).toBe('dev\n');
  });

  it('says which repository could not be cloned, with the token redacted', async () => {
    const dest = path.join(work, 'clone');
    const err = await cloneRepo({
      owner: 'octo',
      repo: `missing-${TOKEN}`,
      dest,
      auth: { baseUrl: remote.baseUrl, token: TOKEN },
    }).catch((e) => e);
    expect(err).toBeInstanceOf(GitError);
    expect(err.message).toMatch(/^could not clone octo\/missing-\[REDACTED\]: git clone failed/);
    expect(err.message).not.toContain(TOKEN);
    await expect(fs.stat(dest)).rejects.toThrow();
  });

  it('sends the token as an HTTP header scoped to the remote, only through the environment', async () => {
    const out = await git(['config', '--get-regexp', 'extraheader'], {
      cwd: work,
      auth: { baseUrl: 'https://github.example', token: TOKEN },
    });
    const basic = Buffer.from(`x-access-token:${TOKEN}`).toString('base64');
    expect(out.trim()).toBe(`http.https://github.example/.extraheader AUTHORIZATION: basic ${basic}`);
  });

  it('kills a hung git command at its timeout', async () => {
    // ext:: runs a command as the "remote"; sleep never answers, like a stalled server.
    const started = Date.now();
    const err = await git(['ls-remote', 'ext::sleep 20'], {
      cwd: work,
      timeoutMs: 800,
      config: { 'protocol.ext.allow': 'always' },
    }).catch((e) => e);
    expect(err).toBeInstanceOf(GitError);
    expect(err.message).toBe('git ls-remote timed out after 1s');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('applies a sandbox patch (new, binary and changed files), commits as the bot and pushes the branch', async () => {
    const dest = path.join(work, 'clone');
    const base = await cloneRepo({
      owner: 'octo',
      repo: 'hello',
      dest,
      auth: { baseUrl: remote.baseUrl, token: TOKEN },
    });
    // The "sandbox" copy: a separate clone that the patch is computed in.
    const sandbox = path.join(work, 'sandbox');
    gitIn(work, 'clone', '-q', `${remote.baseUrl}/octo/hello.git`, sandbox);
    await fs.writeFile(path.join(sandbox, 'src/a.txt'), 'one\nTWO\nthree\n');
    await fs.writeFile(path.join(sandbox, 'new.txt'), 'brand new\n');
    await fs.writeFile(path.join(sandbox, 'blob.bin'), Buffer.from([0, 1, 2, 255, 0, 7]));
    gitIn(sandbox, 'add', '-A');
    const patch = gitIn(sandbox, 'diff', '--cached', '--binary', 'HEAD');

    await applyPatch(dest, patch);
    const stat = await stagedNumstat(dest);
    expect(stat).toEqual([
      { path: 'blob.bin', additions: 0, deletions: 0, binary: true },
      { path: 'new.txt', additions: 1, deletions: 0, binary: false },
      { path: 'src/a.txt', additions: 2, deletions: 1, binary: false },
    ]);
    const branch = branchNameFor(7, 1);
    const sha = await commitStaged(dest, { branch, message: 'Fix #7\n\nbody', identity: DEFAULT_BOT_IDENTITY });
    await pushBranch(dest, { owner: 'octo', repo: 'hello', branch, auth: { baseUrl: remote.baseUrl, token: TOKEN } });

    expect(gitIn(remote.bare, 'rev-parse', `refs/heads/${branch}`).trim()).toBe(sha);
    expect(gitIn(remote.bare, 'log', '-1', '--format=%an <%ae>|%P', sha).trim()).toBe(
      `frognano[bot] <frognano[bot]@users.noreply.github.com>|${base.headSha}`,
    );
    expect(gitIn(remote.bare, 'show', `${sha}:new.txt`)).toBe('brand new\n');
  });

  it('refuses a patch that does not apply, and one that escapes the tree', async () => {
    const dest = path.join(work, 'clone');
    await cloneRepo({ owner: 'octo', repo: 'hello', dest, auth: { baseUrl: remote.baseUrl } });
    const bad =
      'diff --git a/src/a.txt b/src/a.txt\n--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,2 +1,2 @@\n-nope\n+x\n two\n';
    await expect(applyPatch(dest, bad)).rejects.toThrow(/does not apply to the base branch/);
    const escape =
      'diff --git a/../evil b/../evil\nnew file mode 100644\n--- /dev/null\n+++ b/../evil\n@@ -0,0 +1 @@\n+x\n';
    await expect(applyPatch(dest, escape)).rejects.toThrow(/does not apply/);
    await expect(fs.stat(path.join(work, 'evil'))).rejects.toThrow();
  });

  it('names retry branches with the attempt', () => {
    expect(branchNameFor(12, 1)).toBe('frognano/issue-12');
    expect(branchNameFor(12, 3)).toBe('frognano/issue-12-attempt-3');
  });
});
