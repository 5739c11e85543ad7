import nock from 'nock';

export const API = 'https://api.github.com';

export interface RecordedCall {
  method: string;
  path: string;
  body: any;
}

/**
 * nock interceptors for the GitHub REST calls a runner job makes on one repository, answering like GitHub
 * does and recording every request (method, path, parsed body) for assertions. Anything else is unmatched
 * and fails the request (nock.disableNetConnect()).
 */
export function recordGitHub(
  owner: string,
  repo: string,
  opts: { token: string; installationId: number; prNumber?: number; tokenStatus?: number; tokenLifetimeMs?: number },
) {
  const calls: RecordedCall[] = [];
  const r = `/repos/${owner}/${repo}`;
  const rec = (method: string) =>
    function (this: unknown, uri: string, body: unknown) {
      calls.push({
        method,
        path: decodeURIComponent(uri.split('?')[0]),
        body: typeof body === 'string' && body ? JSON.parse(body) : body,
      });
    };
  const pr = opts.prNumber ?? 5;
  let commentId = 9000;
  const scope = nock(API).persist();
  scope.post(`/app/installations/${opts.installationId}/access_tokens`).reply(function (uri, body) {
    rec('POST').call(this, uri, body);
    return opts.tokenStatus && opts.tokenStatus >= 400
      ? [opts.tokenStatus, { message: 'Integration not found' }]
      : [
          201,
          {
            token: opts.token,
            expires_at: new Date(Date.now() + (opts.tokenLifetimeMs ?? 3600_000)).toISOString(),
            permissions: {},
            repository_selection: 'selected',
          },
        ];
  });
  scope
    .get(new RegExp(`^${r}/issues/\\d+/comments`))
    .query(true)
    .reply(function (uri, body) {
      rec('GET').call(this, uri, body);
      return [200, []];
    })
    .post(new RegExp(`^${r}/issues/\\d+/comments$`))
    .reply(function (uri, body) {
      rec('POST').call(this, uri, body);
      commentId += 1;
      return [
        201,
        {
          id: commentId,
          html_url: `https://github.com/${owner}/${repo}/issues/1#issuecomment-${commentId}`,
          user: { type: 'Bot' },
        },
      ];
    })
    .patch(new RegExp(`^${r}/issues/comments/\\d+$`))
    .reply(function (uri, body) {
      rec('PATCH').call(this, uri, body);
      return [
        200,
        { id: Number(uri.split('/').pop()), html_url: `https://github.com/${owner}/${repo}/issues/1#issuecomment` },
      ];
    })
    .post(`${r}/pulls`)
    .reply(function (uri, body) {
      rec('POST').call(this, uri, body);
      return [201, { number: pr, html_url: `https://github.com/${owner}/${repo}/pull/${pr}` }];
    })
    .post(`${r}/labels`)
    .reply(function (uri, body) {
      rec('POST').call(this, uri, body);
      return [201, {}];
    })
    .post(new RegExp(`^${r}/issues/\\d+/labels$`))
    .reply(function (uri, body) {
      rec('POST').call(this, uri, body);
      return [200, []];
    })
    .post(new RegExp(`^${r}/pulls/\\d+/requested_reviewers$`))
    .reply(function (uri, body) {
      rec('POST').call(this, uri, body);
      return [201, {}];
    })
    .post(`${r}/check-runs`)
    .reply(function (uri, body) {
      rec('POST').call(this, uri, body);
      return [201, { id: 321 }];
    });
  return {
    calls,
    /** Bodies of the status comment, in the order they were written. */
    statusBodies: () =>
      calls.filter((c) => /\/comments(\/\d+)?$/.test(c.path) && c.method !== 'GET').map((c) => String(c.body.body)),
    find: (method: string, suffix: string) => calls.filter((c) => c.method === method && c.path.endsWith(suffix)),
    done: () => nock.cleanAll(),
  };
}
