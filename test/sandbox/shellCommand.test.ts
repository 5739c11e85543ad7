/**
 * ExecOptions.clean (the bot's own commands): the shell and environment the command gets, whatever the caller or
 * the sandbox's HOME holds. The same argv runs in every sandbox; the local one shows it without isolation.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalSandbox } from '../../src/sandbox/local.js';
import { CLEAN_PATH, cleanShellArgv } from '../../src/sandbox/shellCommand.js';

describe('clean commands', () => {
  let dir: string;
  let sb: LocalSandbox;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'fn-clean-'));
    sb = new LocalSandbox(dir);
    // What a model would leave in its HOME: the login shell (exec without clean) reads it.
    await sb.exec('echo "export PLANTED=1; git() { echo HIJACKED; }" > ~/.bash_profile');
  });
  afterAll(async () => {
    await sb.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the caller variables but not the shell hooks, a PATH, HOME or exported functions', () => {
    const argv = cleanShellArgv('true', {
      LANG: 'C.UTF-8',
      GIT_CONFIG_NOSYSTEM: '1',
      BASH_ENV: '/tmp/x',
      ENV: '/tmp/x',
      PATH: '/tmp/bin',
      HOME: '/tmp/home',
      'BASH_FUNC_git%%': '() { echo x; }',
      'bad name': 'x',
    });
    expect(argv.slice(0, 5)).toEqual([
      '/usr/bin/env',
      '-i',
      'LANG=C.UTF-8',
      'GIT_CONFIG_NOSYSTEM=1',
      `PATH=${CLEAN_PATH}`,
    ]);
    expect(argv.slice(5, 9)).toEqual(['/bin/bash', '--noprofile', '--norc', '-c']);
    expect(argv.slice(-2)).toEqual(['true', '/tmp']);
  });

  it('runs without the login files, in a fresh HOME and TMPDIR that are gone afterwards', async () => {
    expect((await sb.exec('echo "planted=${PLANTED-no}"')).stdout).toBe('planted=1\n');
    const r = await sb.exec(
      'echo "planted=${PLANTED-no} path=$PATH"; type -t git; ls -A "$HOME" | wc -l; echo "$HOME $TMPDIR"; exit 3',
      { clean: true, env: { EXTRA: 'kept', BASH_ENV: '/nonexistent' } },
    );
    expect(r.exitCode).toBe(3);
    const [first, type, entries, dirs] = r.stdout.split('\n');
    expect(first).toBe(`planted=no path=${CLEAN_PATH}`);
    expect(type).toBe('file');
    expect(entries).toBe('0');
    const [home, tmp] = dirs.split(' ');
    // The local sandbox keeps them below a directory of its own (removed on close); docker and bwrap use /tmp.
    expect(home).toMatch(/\/frognano-clean-\w+\/frognano-clean\.\w+\/home$/);
    expect(tmp).toBe(path.join(path.dirname(home), 'tmp'));
    expect(existsSync(path.dirname(home))).toBe(false);
    expect((await sb.exec('echo $EXTRA', { clean: true, env: { EXTRA: 'kept' } })).stdout).toBe('kept\n');
  });

  it('runs from the repository root, with stdin', async () => {
    await writeFile(path.join(dir, 'marker.txt'), 'here\n');
    const r = await sb.exec('cat marker.txt; cat', { clean: true, stdin: 'from stdin\n' });
    expect(r.stdout).toBe('here\nfrom stdin\n');
  });
});
