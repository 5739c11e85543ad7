import nock from 'nock';
import { compareFiles, gitIn, type BareRemote } from '../github/gitRepo.js';
import { API, type RecordedCall } from './githubRecorder.js';

export { compareFiles };

/**
 * nock interceptors for the REST calls a follow-up round makes on the bot's pull request, answering like
 * GitHub: the PR (its head read from the real bare remote, so a push shows up), description updates, label
 * removal, and the permission of each login. Register before recordGitHub so these win.
 */
export function recordPullRequest(
  remote: BareRemote,
  owner: string,
  repo: string,
  o: {
    number: number;
    head: string;
    base: string;
    state?: string;
    body?: string;
    permissions?: Record<string, string>;
    issueComments?: unknown[];
  },
) {
  const calls: RecordedCall[] = [];
  const r = `/repos/${owner}/${repo}`;
  let body = o.body ?? 'Refs #7\n\n## Summary\n\nOriginal draft.';
  const scope = nock(API).persist();
  const rec = (method: string, uri: string, b: unknown) =>
    calls.push({
      method,
      path: decodeURIComponent(uri.split('?')[0]!),
      body: typeof b === 'string' && b ? JSON.parse(b) : b,
    });
  scope
    .get(`${r}/pulls/${o.number}`)
    .reply((uri) => {
      rec('GET', uri, undefined);
      const sha = gitIn(remote.bare, 'rev-parse', `refs/heads/${o.head}`).trim();
      return [
        200,
        {
          number: o.number,
          state: o.state ?? 'open',
          html_url: `https://github.com/${owner}/${repo}/pull/${o.number}`,
          body,
          user: { login: 'frognano[bot]', type: 'Bot' },
          head: { ref: o.head, sha, repo: { full_name: `${owner}/${repo}` } },
          base: { ref: o.base, repo: { full_name: `${owner}/${repo}` } },
        },
      ];
    })
    .patch(`${r}/pulls/${o.number}`)
    .reply((uri, b) => {
      rec('PATCH', uri, b);
      body = (typeof b === 'string' ? JSON.parse(b) : b).body ?? body;
      return [200, {}];
    })
    // The compare API, from the real bare remote: the pull request's whole diff against its base (from the merge base).
    .get(new RegExp(`^${r}/compare/[^/]+$`))
    .reply((uri) => {
      rec('GET', uri, undefined);
      const [base, head] = decodeURIComponent(uri.split('/compare/')[1]!.split('?')[0]!).split('...');
      return [200, { files: compareFiles(remote, base!, head!) }];
    })
    .delete(new RegExp(`^${r}/issues/${o.number}/labels/.+$`))
    .reply((uri) => {
      rec('DELETE', uri, undefined);
      return [404, { message: 'Label does not exist' }];
    });
  if (o.issueComments) {
    scope
      .get(new RegExp(`^${r}/issues/7/comments`))
      .query(true)
      .reply((uri) => {
        rec('GET', uri, undefined);
        return [200, o.issueComments];
      });
  }
  for (const [login, permission] of Object.entries(o.permissions ?? {})) {
    scope
      .get(`${r}/collaborators/${login}/permission`)
      .reply(200, { permission, role_name: permission, user: { login } });
  }
  const setBody = (text: string) => void (body = text);
  return {
    calls,
    body: () => body,
    setBody,
    find: (method: string, suffix: string) => calls.filter((c) => c.method === method && c.path.endsWith(suffix)),
  };
}
