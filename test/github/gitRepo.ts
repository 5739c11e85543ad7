import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Test helper: a real bare repository under `<root>/<owner>/<repo>.git`, reachable as `file://<root>`. */
export interface BareRemote {
  root: string;
  baseUrl: string;
  bare: string;
  cleanup(): Promise<void>;
}

const sh = (args: string[], cwd: string) =>
  execFileSync('git', args, {
    cwd,
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Dev',
      GIT_AUTHOR_EMAIL: 'dev@example.com',
      GIT_COMMITTER_NAME: 'Dev',
      GIT_COMMITTER_EMAIL: 'dev@example.com',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_CONFIG_NOSYSTEM: '1',
    },
    encoding: 'utf8',
  });

/** Creates owner/repo with the given files on `branch` (and more branches when asked). */
export async function makeBareRemote(
  owner: string,
  repo: string,
  files: Record<string, string>,
  opts: { branch?: string; extraBranches?: Record<string, Record<string, string>> } = {},
): Promise<BareRemote> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-remote-'));
  const bare = path.join(root, owner, `${repo}.git`);
  await fs.mkdir(bare, { recursive: true });
  const branch = opts.branch ?? 'main';
  sh(['init', '-q', '--bare', `--initial-branch=${branch}`, bare], root);
  const work = path.join(root, 'seed');
  sh(['init', '-q', `--initial-branch=${branch}`, work], root);
  for (const [p, c] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(work, p)), { recursive: true });
    await fs.writeFile(path.join(work, p), c);
  }
  sh(['add', '-A'], work);
  sh(['commit', '-q', '-m', 'initial'], work);
  sh(['push', '-q', bare, `HEAD:refs/heads/${branch}`], work);
  for (const [b, extra] of Object.entries(opts.extraBranches ?? {})) {
    sh(['checkout', '-q', '-b', b], work);
    for (const [p, c] of Object.entries(extra)) {
      await fs.mkdir(path.dirname(path.join(work, p)), { recursive: true });
      await fs.writeFile(path.join(work, p), c);
    }
    sh(['add', '-A'], work);
    sh(['commit', '-q', '-m', `on ${b}`], work);
    sh(['push', '-q', bare, `HEAD:refs/heads/${b}`], work);
    sh(['checkout', '-q', branch], work);
  }
  return { root, baseUrl: `file://${root}`, bare, cleanup: () => fs.rm(root, { recursive: true, force: true }) };
}

/**
 * A remote built once per test file and copied for each test (a copy of the directory is a few times cheaper than
 * the dozen git commands and file writes that make one): `copy()` gives a test its own remote to push to.
 */
export async function remoteTemplate(
  owner: string,
  repo: string,
  files: Record<string, string>,
  opts: { branch?: string; extraBranches?: Record<string, Record<string, string>> } = {},
) {
  const template = await makeBareRemote(owner, repo, files, opts);
  return {
    copy: async (): Promise<BareRemote> => {
      const root = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-remote-'));
      await fs.cp(template.root, root, { recursive: true });
      const bare = path.join(root, path.relative(template.root, template.bare));
      return { root, baseUrl: `file://${root}`, bare, cleanup: () => fs.rm(root, { recursive: true, force: true }) };
    },
    cleanup: () => template.cleanup(),
  };
}

export function gitIn(cwd: string, ...args: string[]): string {
  return sh(args, cwd);
}

/** `files` of GitHub's compare answer for `base...head`: numstat of the bare remote (a binary file has no patch). */
export function compareFiles(remote: BareRemote, base: string, head: string) {
  const out = gitIn(remote.bare, 'diff', '--numstat', '--no-renames', `${base}...${head}`).trim();
  return out
    ? out.split('\n').map((line) => {
        const [adds, dels, filename] = line.split('\t');
        const binary = adds === '-';
        const additions = binary ? 0 : Number(adds);
        const deletions = binary ? 0 : Number(dels);
        return {
          filename,
          status: 'modified',
          additions,
          deletions,
          changes: additions + deletions,
          ...(binary ? {} : { patch: '@@' }),
        };
      })
    : [];
}
