import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compareFiles, gitIn, type BareRemote } from '../github/gitRepo.js';
import type { RecordedCall } from './githubRecorder.js';

/**
 * A stand-in for GitHub's REST API on 127.0.0.1, for tests that cannot use nock: nock's interceptor breaks
 * the Docker engine's hijacked exec streams (stdin writes fail with EPIPE) even when it lets them pass.
 * (So nothing here may import nock, not even through a helper.) Point Octokit's baseUrl at `url`. It answers the calls a runner job makes on one repository, like
 * githubRecorder.ts does, records every request, and answers 404 to anything else (recorded too).
 */
export async function startLocalGitHub(
  owner: string,
  repo: string,
  opts: {
    token: string;
    installationId: number;
    prNumber?: number;
    /** Answer a follow-up round's calls on the bot's pull request `prNumber` (head read from the real remote). */
    pull?: { remote: BareRemote; head: string; base: string };
  },
) {
  const calls: RecordedCall[] = [];
  const r = `/repos/${owner}/${repo}`;
  const pr = opts.prNumber ?? 5;
  let commentId = 9000;
  const routes: Route[] = [
    [
      'POST',
      new RegExp(`^/app/installations/${opts.installationId}/access_tokens$`),
      () => [
        201,
        {
          token: opts.token,
          expires_at: new Date(Date.now() + 3600_000).toISOString(),
          permissions: {},
          repository_selection: 'selected',
        },
      ],
    ],
    ['GET', new RegExp(`^${r}/issues/\\d+/comments$`), () => [200, []]],
    [
      'POST',
      new RegExp(`^${r}/issues/\\d+/comments$`),
      () => [
        201,
        {
          id: ++commentId,
          html_url: `https://github.com/${owner}/${repo}/issues/1#issuecomment-${commentId}`,
          user: { type: 'Bot' },
        },
      ],
    ],
    [
      'PATCH',
      new RegExp(`^${r}/issues/comments/\\d+$`),
      () => [
        200,
        { id: commentId, html_url: `https://github.com/${owner}/${repo}/issues/1#issuecomment-${commentId}` },
      ],
    ],
    [
      'POST',
      new RegExp(`^${r}/pulls$`),
      () => [201, { number: pr, html_url: `https://github.com/${owner}/${repo}/pull/${pr}` }],
    ],
    ['POST', new RegExp(`^${r}/labels$`), () => [201, {}]],
    ['POST', new RegExp(`^${r}/issues/\\d+/labels$`), () => [200, []]],
    ['POST', new RegExp(`^${r}/check-runs$`), () => [201, { id: 321 }]],
    ['POST', new RegExp(`^${r}/pulls/\\d+/requested_reviewers$`), () => [201, {}]],
    ...(opts.pull ? pullRoutes(owner, repo, pr, opts.pull) : []),
  ];
  const unexpected: RecordedCall[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const path = decodeURIComponent((req.url ?? '').split('?')[0]!);
    const call: RecordedCall = { method: req.method ?? '', path, body: raw ? JSON.parse(raw) : undefined };
    calls.push(call);
    const route = routes.find(([m, re]) => m === req.method && re.test(path));
    if (!route) unexpected.push(call);
    const [status, body] = route ? route[2](path, call.body) : [404, { message: 'Not Found' }];
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    unexpected,
    statusBodies: () =>
      calls.filter((c) => /\/comments(\/\d+)?$/.test(c.path) && c.method !== 'GET').map((c) => String(c.body.body)),
    find: (method: string, suffix: string) => calls.filter((c) => c.method === method && c.path.endsWith(suffix)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Route = [string, RegExp, (path: string, body: any) => [number, unknown]];

/** The calls of a follow-up round on pull request `pr` (as pullRequestRecorder.ts answers them with nock). */
function pullRoutes(owner: string, repo: string, pr: number, p: { remote: BareRemote; head: string; base: string }) {
  const r = `/repos/${owner}/${repo}`;
  const full_name = `${owner}/${repo}`;
  let body = 'Refs #7\n\n## Summary\n\nOriginal draft.';
  const routes: Route[] = [
    [
      'GET',
      new RegExp(`^${r}/pulls/${pr}$`),
      () => [
        200,
        {
          number: pr,
          state: 'open',
          html_url: `https://github.com/${full_name}/pull/${pr}`,
          body,
          user: { login: 'frognano[bot]', type: 'Bot' },
          head: {
            ref: p.head,
            sha: gitIn(p.remote.bare, 'rev-parse', `refs/heads/${p.head}`).trim(),
            repo: { full_name },
          },
          base: { ref: p.base, repo: { full_name } },
        },
      ],
    ],
    [
      'PATCH',
      new RegExp(`^${r}/pulls/${pr}$`),
      (_path, b) => {
        body = typeof b?.body === 'string' ? b.body : body;
        return [200, {}];
      },
    ],
    [
      'GET',
      new RegExp(`^${r}/compare/[^/]+$`),
      (path) => {
        const [base, head] = path.split('/compare/')[1]!.split('...');
        return [200, { files: compareFiles(p.remote, base!, head!) }];
      },
    ],
    ['DELETE', new RegExp(`^${r}/issues/${pr}/labels/.+$`), () => [404, { message: 'Label does not exist' }]],
    ['GET', new RegExp(`^${r}/collaborators/[^/]+/permission$`), () => [200, { permission: 'write' }]],
  ];
  return routes;
}
