import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GitError } from '../../src/github/git.js';
import { GitMirrorCache } from '../../src/github/gitMirror.js';
import { gitIn, makeBareRemote, remoteTemplate, type BareRemote } from './gitRepo.js';

const TOKEN = 'ghs_' + 'Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2';
const INST = 4242;

/** 150 files: more objects than git's unpack limit, so the mirror's fetch keeps a real pack file. */
function manyFiles(): Record<string, string> {
  const files: Record<string, string> = { 'README.md': '# hello\n' };
  for (let i = 0; i < 150; i++) files[`src/f${i}.txt`] = `file ${i}\n`;
  return files;
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const d of await fs.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) out.push(...(await filesUnder(p)));
    else if (d.isFile()) out.push(p);
  }
  return out;
}

/** Pushes one more commit to the remote's `branch`. */
async function pushCommit(remote: BareRemote, branch: string, file: string, text: string): Promise<string> {
  const work = path.join(remote.root, 'seed');
  gitIn(work, 'checkout', '-q', branch);
  await fs.writeFile(path.join(work, file), text);
  gitIn(work, 'add', '-A');
  gitIn(work, 'commit', '-q', '-m', `change ${file}`);
  gitIn(work, 'push', '-q', remote.bare, `HEAD:refs/heads/${branch}`);
  return gitIn(work, 'rev-parse', 'HEAD').trim();
}

describe('git mirror per installation and repository', () => {
  let remote: BareRemote;
  let work: string;
  let cache: GitMirrorCache;
  const auth = () => ({ baseUrl: remote.baseUrl, token: TOKEN });
  const clone = (dest: string, branch?: string, c = cache) =>
    c.clone({ owner: 'octo', repo: 'hello', installationId: INST, auth: auth(), dest: path.join(work, dest), branch });

  let template: Awaited<ReturnType<typeof remoteTemplate>>;

  beforeAll(async () => {
    template = await remoteTemplate('octo', 'hello', manyFiles(), {
      extraBranches: { develop: { 'DEV.md': 'dev\n' } },
    });
  });
  afterAll(() => template.cleanup());
  beforeEach(async () => {
    remote = await template.copy();
    work = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-mirror-'));
    cache = new GitMirrorCache({ dir: path.join(work, 'cache'), maxBytes: 1024 ** 3 });
  });
  afterEach(async () => {
    await remote.cleanup();
    await fs.rm(work, { recursive: true, force: true });
  });

  it('creates the mirror, then fetches only what changed; the clone owns its objects and names the remote', async () => {
    const first = await clone('one', 'main');
    expect(first.mirror).toBe('created');
    expect(first.branch).toBe('main');
    const mirror = cache.mirrorPath(INST, 'octo', 'hello');
    expect(gitIn(mirror, 'rev-parse', '--is-bare-repository').trim()).toBe('true');
    const sha = await pushCommit(remote, 'main', 'NEW.md', 'new\n');
    const second = await clone('two', 'main');
    expect(second.mirror).toBe('updated');
    expect(second.headSha).toBe(sha);
    expect(await fs.readFile(path.join(second.dir, 'NEW.md'), 'utf8')).toBe('new\n');
    expect(gitIn(mirror, 'rev-parse', 'refs/heads/main').trim()).toBe(sha);
    // No alternates pointing into the mirror: the clone stands alone.
    await expect(fs.stat(path.join(second.dir, '.git/objects/info/alternates'))).rejects.toThrow();
    await fs.rm(mirror, { recursive: true });
    expect(gitIn(second.dir, 'fsck', '--no-dangling').trim()).toBe('');
    const cfg = await fs.readFile(path.join(second.dir, '.git/config'), 'utf8');
    expect(cfg).toContain(`url = ${remote.baseUrl}/octo/hello.git`);
  });

  it('never writes the token to disk: not in the mirror, not in the clone', async () => {
    await clone('one', 'main');
    await pushCommit(remote, 'develop', 'X.md', 'x\n');
    await clone('two', 'develop');
    const basic = Buffer.from(`x-access-token:${TOKEN}`).toString('base64');
    const files = [...(await filesUnder(path.join(work, 'cache'))), ...(await filesUnder(path.join(work, 'two')))];
    expect(files.length).toBeGreaterThan(10);
    for (const f of files) {
      const text = await fs.readFile(f, 'latin1');
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(basic);
      expect(text).not.toContain('extraheader');
    }
  });

  it("hardlinks the mirror's packs into the clone; neither side's later writes touch the other's files", async () => {
    const first = await clone('one', 'main');
    const mirror = cache.mirrorPath(INST, 'octo', 'hello');
    const packs = (await filesUnder(path.join(mirror, 'objects/pack'))).filter((f) => f.endsWith('.pack'));
    const ownPacks = (await filesUnder(path.join(first.dir, '.git/objects/pack'))).filter((f) => f.endsWith('.pack'));
    // The same inode (a hardlink, nothing copied), and no alternates into the cache.
    const inodes = async (fs_: string[]) => Promise.all(fs_.map(async (f) => (await fs.stat(f)).ino));
    expect((await inodes(ownPacks)).sort()).toEqual((await inodes(packs)).sort());
    await expect(fs.stat(path.join(first.dir, '.git/objects/info/alternates'))).rejects.toThrow();
    const before = await Promise.all(packs.map((f) => fs.readFile(f)));
    // The job's clone commits and repacks (new files, the old names unlinked); the mirror fetches a new commit.
    await fs.writeFile(path.join(first.dir, 'JOB.md'), 'job\n');
    gitIn(first.dir, 'add', '-A');
    gitIn(first.dir, '-c', 'user.name=b', '-c', 'user.email=b@x', 'commit', '-q', '-m', 'job');
    gitIn(first.dir, 'repack', '-a', '-d', '-q');
    gitIn(first.dir, 'prune-packed');
    const sha = await pushCommit(remote, 'main', 'NEW.md', 'new\n');
    expect((await clone('two', 'main')).headSha).toBe(sha);
    expect(await Promise.all(packs.map((f) => fs.readFile(f)))).toEqual(before);
    expect(gitIn(mirror, 'fsck', '--no-dangling').trim()).toBe('');
    await fs.rm(mirror, { recursive: true });
    expect(gitIn(first.dir, 'fsck', '--no-dangling').trim()).toBe('');
  });

  it('survives a concurrent pair of jobs on the same repository', async () => {
    const other = new GitMirrorCache({ dir: path.join(work, 'cache'), maxBytes: 1024 ** 3 });
    const [a, b] = await Promise.all([clone('a', 'main'), clone('b', 'develop', other)]);
    expect([a.mirror, b.mirror].sort()).toEqual(['created', 'updated']);
    expect(await fs.readFile(path.join(b.dir, 'DEV.md'), 'utf8')).toBe('dev\n');
    const mirror = cache.mirrorPath(INST, 'octo', 'hello');
    expect(gitIn(mirror, 'fsck', '--no-dangling').trim()).toBe('');
    await expect(fs.stat(`${mirror}.lock`)).rejects.toThrow();
  });

  it('waits for a lock another process holds, and takes over one whose owner died', async () => {
    const mirror = cache.mirrorPath(INST, 'octo', 'hello');
    await fs.mkdir(path.dirname(mirror), { recursive: true });
    const holder = spawn('sleep', ['60'], { stdio: 'ignore' });
    await fs.writeFile(`${mirror}.lock`, String(holder.pid));
    const impatient = new GitMirrorCache({ dir: path.join(work, 'cache'), maxBytes: 1024 ** 3, lockTimeoutMs: 300 });
    const err = await clone('one', 'main', impatient).catch((e) => e);
    expect(err).toBeInstanceOf(GitError);
    expect(err.message).toMatch(/waiting for the lock on the git mirror of octo\/hello/);
    const exited = new Promise((r) => holder.once('exit', r));
    holder.kill('SIGKILL');
    await exited;
    expect((await clone('two', 'main', impatient)).mirror).toBe('created');
  });

  it('drops a mirror whose pack file is corrupt and clones it fresh', async () => {
    await clone('one', 'main');
    const mirror = cache.mirrorPath(INST, 'octo', 'hello');
    const packs = (await filesUnder(path.join(mirror, 'objects/pack'))).filter((f) => f.endsWith('.pack'));
    expect(packs.length).toBeGreaterThan(0);
    for (const p of packs) {
      const buf = await fs.readFile(p);
      buf.fill(0x5a, 12, buf.length - 20); // the header and checksum stay; every object inside is garbage
      await fs.chmod(p, 0o644);
      await fs.writeFile(p, buf);
    }
    const sha = await pushCommit(remote, 'main', 'AFTER.md', 'after\n');
    const again = await clone('two', 'main');
    expect(again.mirror).toBe('recloned');
    expect(again.headSha).toBe(sha);
    expect(await fs.readFile(path.join(again.dir, 'src/f7.txt'), 'utf8')).toBe('file 7\n');
    expect(gitIn(mirror, 'fsck', '--no-dangling').trim()).toBe('');
  });

  it('keeps installations apart and evicts the least recently used mirror past the budget', async () => {
    const other = await makeBareRemote('octo', 'other', manyFiles());
    try {
      const small = new GitMirrorCache({ dir: path.join(work, 'cache'), maxBytes: 1 });
      const o = (repo: string, installationId: number, dest: string, baseUrl: string) =>
        small.clone({ owner: 'octo', repo, installationId, auth: { baseUrl }, dest: path.join(work, dest) });
      await o('hello', INST, 'a', remote.baseUrl);
      expect((await small.list()).map((m) => m.dir)).toEqual([small.mirrorPath(INST, 'octo', 'hello')]);
      await o('other', INST + 1, 'b', other.baseUrl);
      // The budget holds one at most: the older mirror went, the one just used stays.
      expect((await small.list()).map((m) => m.dir)).toEqual([small.mirrorPath(INST + 1, 'octo', 'other')]);
      const roomy = new GitMirrorCache({ dir: path.join(work, 'cache'), maxBytes: 1024 ** 3 });
      await roomy.clone({
        owner: 'octo',
        repo: 'hello',
        installationId: INST,
        auth: auth(),
        dest: path.join(work, 'c'),
      });
      expect((await roomy.evict()).length).toBe(0);
      expect((await roomy.list()).length).toBe(2);
    } finally {
      await other.cleanup();
    }
  });

  it('refuses names that are not a repository, and reports a remote that refuses like cloneRepo', async () => {
    expect(() => cache.mirrorPath(INST, '..', 'hello')).toThrow(GitError);
    expect(() => cache.mirrorPath(0, 'octo', 'hello')).toThrow(GitError);
    const err = await cache
      .clone({ owner: 'octo', repo: 'missing', installationId: INST, auth: auth(), dest: path.join(work, 'x') })
      .catch((e) => e);
    expect(err).toBeInstanceOf(GitError);
    expect(err.message).toMatch(/^could not clone octo\/missing: /);
    await expect(fs.stat(path.join(work, 'x'))).rejects.toThrow();
  });
});
