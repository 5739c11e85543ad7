import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import nock from 'nock';
import type { CliIo } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/main.js';
import { loadTrajectoryFile } from '../../src/cli/trajectoryFile.js';
import { cleanEnv, makeRepo, snapshotTree, tempDir, writeJson } from './helpers.js';

// `solve --github owner/repo#N` in process (so nock can stand in for api.github.com), same code path as the binary.

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

function io(env: NodeJS.ProcessEnv, cwd: string): CliIo & { stdout: Capture; stderr: Capture } {
  return { stdout: new Capture(), stderr: new Capture(), env, cwd };
}

let work: string;
let repo: string;
let replay: string;

beforeAll(async () => {
  nock.disableNetConnect();
  work = await tempDir('github');
  repo = await makeRepo(path.join(work, 'widgets'), { VERSION: '1.0.0\n' });
  replay = await writeJson(path.join(work, 'turns.json'), {
    turns: [
      { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'VERSION', content: '1.0.1\n' } }] },
      { content: 'Bumped the version to 1.0.1.' },
    ],
  });
});

afterEach(() => nock.cleanAll());
afterAll(async () => {
  nock.enableNetConnect();
  await fs.rm(work, { recursive: true, force: true });
});

test('the issue title and body come from the GitHub API and reach the model', async () => {
  const before = await snapshotTree(repo);
  const api = nock('https://api.github.com')
    .get('/repos/octo-org/widgets/issues/7')
    .reply(200, { number: 7, title: 'Bump the version', body: 'Release 1.0.1 needs VERSION updated.' });
  const out = path.join(work, 'out');
  const cli = io(cleanEnv(), work);
  const code = await runCli(
    ['solve', repo, '--github', 'octo-org/widgets#7', '--replay', replay, '--sandbox', 'bwrap', '--out', out, '--json'],
    cli,
  );
  api.done();
  expect(cli.stderr.text).not.toMatch(/frognano: /);
  expect(code).toBe(0);
  expect(JSON.parse(cli.stdout.text)).toMatchObject({ exitCode: 0, patchProduced: true });
  const t = await loadTrajectoryFile(path.join(out, 'trajectory.json'));
  expect(t.frognano.task).toEqual({
    title: 'Bump the version',
    body: 'Release 1.0.1 needs VERSION updated.',
    repo: 'octo-org/widgets',
    issueNumber: 7,
  });
  const firstUser = t.messages.find((m) => m.role === 'user');
  expect(firstUser?.content).toContain('Bump the version');
  expect(firstUser?.content).toContain('Release 1.0.1 needs VERSION updated.');
  expect(await fs.readFile(path.join(out, 'changes.patch'), 'utf8')).toContain('+1.0.1');
  expect(await snapshotTree(repo)).toEqual(before);
});

test('an issue GitHub does not know: exit 3 with a hint, nothing run', async () => {
  nock('https://api.github.com').get('/repos/octo-org/widgets/issues/99').reply(404, { message: 'Not Found' });
  const out = path.join(work, 'out-404');
  const cli = io(cleanEnv(), work);
  const code = await runCli(
    ['solve', repo, '--github', 'octo-org/widgets#99', '--replay', replay, '--sandbox', 'bwrap', '--out', out],
    cli,
  );
  expect(code).toBe(3);
  expect(cli.stderr.text).toBe(
    'frognano: issue octo-org/widgets#99 not found\n  → check the owner, repository and number; for a private repository set GITHUB_TOKEN\n',
  );
  await expect(fs.stat(out)).rejects.toThrow(/ENOENT/);
});
