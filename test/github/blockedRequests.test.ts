import { describe, expect, test } from '@jest/globals';
import { BLOCKED_SHOWN, type BlockedNetworkRequest } from '../../src/github/blockedRequests.js';
import { renderPullRequestBody } from '../../src/github/pullRequest.js';
import { describeCurrentState } from '../../src/github/pullRequestDescription.js';
import { renderStatusComment } from '../../src/github/statusComment.js';

/** What the egress proxy refused a round's setup commands, in the status comment and the pull request description. */
const blocked: BlockedNetworkRequest[] = [
  { host: 'evil.example', port: 443, reason: 'not on the allowlist', count: 3, command: 'pip install -r req.txt' },
  {
    host: 'meta.test',
    port: 80,
    reason: 'resolves to a private, loopback, link-local or reserved address',
    count: 1,
    command: 'curl http://meta.test/latest/meta-data/',
  },
];
/** Host and command come from the repository: a hostile one must stay inert. */
const hostile: BlockedNetworkRequest = {
  host: '[x](http://a.b) @admin #1',
  port: 443,
  reason: 'not on the allowlist',
  count: 1,
  command: 'echo "<!-- frognano:status -->" `fixes #2` <img src=x>\n## Approved',
};
const base = {
  issueNumber: 7,
  summary: 'Fixed it.',
  files: [{ path: 'a.txt', additions: 1, deletions: 0, binary: false }],
  tests: [],
  exitReason: 'agent',
  turns: 2,
  elapsedSeconds: 5,
};

describe('blocked network requests', () => {
  test('the pull request description lists each with host, port, reason, count and command', () => {
    const body = renderPullRequestBody({ ...base, blockedRequests: blocked });
    expect(body).toContain('## Blocked network requests');
    expect(body).toContain('- evil\\.example:443: not on the allowlist (3 times), from pip install \\-r req\\.txt');
    expect(body).toMatch(/- meta\\\.test:80: resolves to a private\\, loopback\\, link\\-local .* from curl http/);
    // Before the run details, so a follow-up round's rewrite replaces it.
    expect(body.indexOf('## Blocked network requests')).toBeLessThan(body.indexOf('## Run'));
    expect(renderPullRequestBody(base)).not.toContain('Blocked network requests');
  });

  test(`shows the first ${BLOCKED_SHOWN}, then a count`, () => {
    const many = Array.from({ length: 27 }, (_, i) => ({ ...blocked[0]!, host: `h${i}.example` }));
    const body = renderPullRequestBody({ ...base, blockedRequests: many });
    expect(body).toContain('- h19\\.example:443');
    expect(body).not.toContain('h20\\.example');
    expect(body).toContain('- … and 7 more');
  });

  test('neutralises host and command: no link, mention, reference, marker, HTML or heading', () => {
    const body = renderPullRequestBody({ ...base, blockedRequests: [hostile] });
    const section = body.slice(body.indexOf('## Blocked'), body.indexOf('## Run'));
    expect(section).not.toContain('](http');
    // Every `<`, `[`, `#` escaped (inert text), mentions and references broken by an invisible character.
    expect(section).not.toMatch(/@admin|#1\b|#2\b|(?<!\\)[<[]|\n## Approved/);
    const comment = renderStatusComment(
      { kind: 'pull_request', url: 'https://github.com/o/r/pull/8', number: 8 },
      { blockedRequests: [hostile] },
    );
    expect(comment.match(/<!--/g)).toHaveLength(1); // the bot's own marker only
    expect(comment).not.toMatch(/@admin|\]\(http/);
  });

  test('a follow-up round rewrites the section with its own refusals (or drops it)', () => {
    const draft = renderPullRequestBody({ ...base, blockedRequests: blocked, renderTrajectory: () => 'traj' });
    const now = { round: 2, summary: 'More.', files: base.files, baseBranch: 'main', tests: [] };
    const again = describeCurrentState(draft, { ...now, blockedRequests: [blocked[1]!] });
    expect(again.match(/## Blocked network requests/g)).toHaveLength(1);
    expect(again).not.toContain('evil\\.example');
    expect(again).toContain('meta\\.test:80');
    expect(describeCurrentState(draft, now)).not.toContain('Blocked network requests');
  });

  test('the status comment has one line once the round has ended, none while it runs', () => {
    const comment = renderStatusComment(
      { kind: 'pull_request', url: 'https://github.com/o/r/pull/8', number: 8 },
      { blockedRequests: blocked },
    );
    const lines = comment.split('\n').filter((l) => l.includes('blocked'));
    expect(lines).toEqual([
      "🚧 The setup commands' network requests were blocked: evil\\.example:443 (not on the allowlist) and 1 more.",
    ]);
    expect(renderStatusComment({ kind: 'no_patch', reason: 'x' }, { blockedRequests: blocked })).toContain('🚧');
    expect(renderStatusComment({ kind: 'running' }, { blockedRequests: blocked })).not.toContain('🚧');
    expect(renderStatusComment({ kind: 'no_patch', reason: 'x' }, {})).not.toContain('🚧');
  });
});
