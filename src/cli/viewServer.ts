import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Trajectory } from '../leaf/trajectory.js';
import { createRunPagesHandler, type RoundSource } from '../runs/http.js';
import { storedRound, type StoredRound } from '../runs/record.js';
import { runPageUrl } from '../runs/url.js';

/** A CLI run as the one round of a run, named after its task's repository and issue when it has them. */
export function localRound(t: Trajectory): StoredRound {
  const [owner, repo] = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(t.frognano.task.repo ?? '')
    ? t.frognano.task.repo!.split('/')
    : ['local', 'run'];
  const result = t.output_patch.trim() ? 'patch written' : 'no patch';
  return storedRound(t, {
    owner: owner!,
    repo: repo!,
    issueNumber: t.frognano.task.issueNumber ?? 1,
    round: 0,
    kind: 'draft',
    trigger: 'frognano solve',
    result,
    // The test commands solve ran after the model finished (kept in the trajectory file since issue #29).
    tests: (t.frognano.test_results ?? []).map((x) => ({
      command: x.command,
      exitCode: x.exit_code,
      timedOut: x.timed_out,
      outputTail: x.output_tail,
    })),
  });
}

export interface ViewServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The Host values a loopback server answers. Any other name, even one that resolves to 127.0.0.1, is a page from
 * another site rebinding its DNS to read this one (there is no sign-in here): it gets 421.
 */
export function loopbackHosts(port: number): Set<string> {
  const names = ['127.0.0.1', 'localhost', '[::1]'];
  return new Set([...names.map((n) => `${n}:${port}`), ...(port === 80 ? names : [])]);
}

/**
 * Serves one trajectory's page on 127.0.0.1 (never another interface: there is no sign-in), only to requests that
 * name it by a loopback Host (`loopbackHosts`). `/` redirects to the page.
 */
export async function startViewServer(t: Trajectory, port = 0): Promise<ViewServer> {
  const round = localRound(t);
  const same = (ref: { owner: string; repo: string; issueNumber: number }) =>
    ref.owner === round.ref.owner && ref.repo === round.ref.repo && ref.issueNumber === round.ref.issueNumber;
  const source: RoundSource = {
    listRounds: async (ref) => (same(ref) ? [round.summary] : []),
    getRound: async (ref) => (same(ref) && ref.round === 0 ? round : null),
  };
  const handler = createRunPagesHandler({ source });
  const run = { owner: round.ref.owner, repo: round.ref.repo, issueNumber: round.ref.issueNumber };
  let hosts = new Set<string>();
  const server = http.createServer((req, res) => {
    if (!hosts.has((req.headers.host ?? '').toLowerCase())) {
      res.writeHead(421, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      return void res.end('This server answers only for 127.0.0.1, localhost and [::1] on its own port.\n');
    }
    if (handler(req, res)) return;
    res.writeHead(302, { location: runPageUrl('', run) }).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  hosts = loopbackHosts(bound);
  const base = `http://127.0.0.1:${bound}`;
  return {
    url: runPageUrl(base, run),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
