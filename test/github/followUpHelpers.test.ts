import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { approvalCounts, approvalExternalId, parseApprovalExternalId } from '../../src/github/approvalRule.js';
import { coAuthorTrailer, withCoAuthor } from '../../src/github/coAuthor.js';
import { appendRunHistory } from '../../src/github/followUpPullRequest.js';
import { readRepoFile } from '../../src/github/repoFiles.js';
import { renderStatusComment, summarizeStatus } from '../../src/github/statusComment.js';

describe('Co-authored-by trailer', () => {
  it("uses GitHub's noreply address with the user id, or the older form without", () => {
    expect(coAuthorTrailer({ login: 'octocat', id: 583231 })).toBe(
      'Co-authored-by: octocat <583231+octocat@users.noreply.github.com>',
    );
    expect(coAuthorTrailer({ login: 'octocat' })).toBe('Co-authored-by: octocat <octocat@users.noreply.github.com>');
  });
  it('adds nothing for a login that could break the trailer', () => {
    expect(coAuthorTrailer({ login: 'evil>\nSigned-off-by: x' })).toBeNull();
    expect(withCoAuthor('subject\n', { login: 'a b' })).toBe('subject\n');
  });
  it('puts the trailer in its own last paragraph', () => {
    expect(withCoAuthor('subject\n\nbody\n', { login: 'm', id: 1 })).toBe(
      'subject\n\nbody\n\nCo-authored-by: m <1+m@users.noreply.github.com>\n',
    );
  });
});

describe('run history in the PR description', () => {
  const entry = (n: number, sha: string | null = 'a'.repeat(40)) => ({
    round: `Follow-up ${n}`,
    trigger: `review by @maint`,
    headSha: sha,
    result: 'done',
  });

  it('adds a section with the draft row and keeps the text before it', () => {
    const body = appendRunHistory('## Summary\n\nFixed it.', entry(1));
    expect(body).toBe(
      '## Summary\n\nFixed it.\n\n<!-- frognano:history -->\n## Run history\n\n| Round | Trigger | Head | Result | Summary |\n| --- | --- | --- | --- | --- |\n' +
        '| Draft | issue | — | draft pull request opened | — |\n| Follow-up 1 | review by @\u200bmaint | `aaaaaaa` | done | — |\n<!-- /frognano:history -->',
    );
  });

  it('appends to the existing section and keeps what a maintainer wrote after it', () => {
    const once = `${appendRunHistory('Intro', entry(1))}\n\nMaintainer note.`;
    const twice = appendRunHistory(once, entry(2, null));
    expect(twice.match(/## Run history/g)).toHaveLength(1);
    expect(twice).toContain('| Follow-up 1 |');
    expect(twice).toContain(
      '| Follow-up 2 | review by @\u200bmaint | — | done | — |\n<!-- /frognano:history -->\n\nMaintainer note.',
    );
  });

  it('stays within GitHub body limits however long the description and history get', () => {
    let body = 'x'.repeat(65_000);
    for (let i = 1; i <= 100; i++) body = appendRunHistory(body, entry(i));
    expect(body.length).toBeLessThanOrEqual(65_536 - 512);
    expect(body).toContain('| Follow-up 100 |');
    expect(body).toContain('earlier rounds not shown');
  });
});

describe('readRepoFile (from git objects, never the file system)', () => {
  let dir: string;
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: dir,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 'a',
        GIT_AUTHOR_EMAIL: 'a@b',
        GIT_COMMITTER_NAME: 'a',
        GIT_COMMITTER_EMAIL: 'a@b',
        GIT_CONFIG_GLOBAL: '/dev/null',
      },
    });
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-repofile-'));
    git('init', '-q');
    await fs.writeFile(path.join(dir, 'AGENTS.md'), 'Use tabs.\n');
    await fs.mkdir(path.join(dir, '.github'));
    await fs.symlink('/etc/passwd', path.join(dir, '.github', 'frognano.md'));
    await fs.writeFile(path.join(dir, 'big.md'), 'y'.repeat(5000));
    git('add', '-A');
    git('commit', '-q', '-m', 'x');
    // A change in the work tree after the commit is not what HEAD says.
    await fs.writeFile(path.join(dir, 'AGENTS.md'), 'tampered\n');
  });
  afterAll(() => fs.rm(dir, { recursive: true, force: true }));

  it('reads the committed text', async () => {
    expect(await readRepoFile(dir, 'AGENTS.md', 100)).toEqual({
      path: 'AGENTS.md',
      text: 'Use tabs.\n',
      truncatedChars: 0,
    });
  });
  it('refuses a committed symlink', async () => {
    expect(await readRepoFile(dir, '.github/frognano.md', 100)).toBeNull();
  });
  it('cuts long files and says by how much', async () => {
    expect(await readRepoFile(dir, 'big.md', 1000)).toMatchObject({ text: 'y'.repeat(1000), truncatedChars: 4000 });
  });
  it('returns null for a missing file or a directory', async () => {
    expect(await readRepoFile(dir, 'nope.md', 100)).toBeNull();
    expect(await readRepoFile(dir, '.github', 100)).toBeNull();
  });
});

describe('two-person rule in the approval check', () => {
  it('round-trips through external_id', () => {
    expect(approvalExternalId(7)).toBe('issue-7');
    expect(approvalExternalId(7, 'Maint')).toBe('issue-7;not-by=maint');
    expect(parseApprovalExternalId('issue-7;not-by=maint')).toEqual({ issueNumber: 7, notBy: 'maint' });
    expect(parseApprovalExternalId('issue-7')).toEqual({ issueNumber: 7 });
    expect(parseApprovalExternalId('something else')).toEqual({});
  });
  it("does not count the trigger's approval, whatever the case of the login", () => {
    const rule = parseApprovalExternalId('issue-7;not-by=maint');
    expect(approvalCounts(rule, 'MAINT')).toBe(false);
    expect(approvalCounts(rule, 'other')).toBe(true);
    expect(approvalCounts({}, 'maint')).toBe(true);
  });
});

describe('status comment of a follow-up round', () => {
  const meta = { round: 2, jobId: 'o/r#12@2', triggeredBy: 'maint', updatedAt: new Date('2026-01-01T00:00:00Z') };
  it('speaks of rounds and pushed commits, never of attempts or new pull requests', () => {
    const bodies = [
      renderStatusComment({ kind: 'queued', position: 1 }, meta),
      renderStatusComment({ kind: 'running', turn: 3, maxTurns: 100 }, meta),
      renderStatusComment(
        { kind: 'pull_request', url: 'https://github.com/o/r/pull/12', number: 12, summary: 'Renamed it. @someone #3' },
        meta,
      ),
      renderStatusComment(
        { kind: 'no_patch', reason: 'The model finished without changing any file; the pull request is unchanged.' },
        meta,
      ),
      renderStatusComment({ kind: 'failed', reason: 'boom' }, meta),
      renderStatusComment({ kind: 'cancelled', by: 'maint' }, meta),
    ];
    expect(bodies.map((b) => b.split('\n')[1])).toEqual([
      '### ⏳ frognano: round 2 queued',
      '### 🛠️ frognano: working on round 2',
      '### ✅ frognano: round 2 pushed',
      '### 🤷 frognano: round 2 changed nothing',
      '### ❌ frognano: round 2 failed',
      '### 🛑 frognano: round 2 cancelled',
    ]);
    for (const b of bodies) {
      expect(b).not.toMatch(/attempt|opened|retry/i);
      expect(b).toContain('job `o/r#12@2`');
    }
    expect(bodies[2]).not.toContain('@someone'); // the model's summary stays inert
    expect(summarizeStatus({ kind: 'pull_request', url: 'u', number: 12 }, 2)).toBe('new commits pushed to #12');
  });
});
