import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { describeIsolation } from './conformance.js';

describeIsolation('bwrap', (ws, limits) => BwrapSandbox.create(ws, limits));

describe('BwrapSandbox host view', () => {
  let dir: string;
  let sb: BwrapSandbox;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'fn-bwrap-view-'));
    sb = await BwrapSandbox.create(dir);
  });
  afterAll(async () => {
    await sb.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('shows only the system directories and an allow-list of /etc, never host secrets or homes', async () => {
    const r = await sb.exec(
      'for p in /etc/shadow /etc/ssh /etc/docker /root /home/agent/.. /var/run/docker.sock /run /proc/1/cmdline /usr/bin/git; do ' +
        '[ -e "$p" ] && echo "present $p"; done; ls /; getent passwd | cut -d: -f1 | tr "\\n" " "; echo; ls /home',
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).not.toMatch(/present \/etc\/shadow|present \/etc\/ssh|present \/etc\/docker|present \/root|docker\.sock|present \/run\b/);
    expect(r.stdout).toContain('present /usr/bin/git');
    expect(r.stdout).toContain('root agent nobody');
    // PID namespace: pid 1 is bwrap's init, not the host's.
    const init = await sb.exec('cat /proc/1/cmdline | tr "\\0" " "');
    expect(init.stdout).toMatch(/^bwrap/);
    expect(r.stdout.split('\n')).toContain('agent');
  });

  it('starts the host tools it binds (python, git) and gives git the same defaults as the docker image', async () => {
    const r = await sb.exec(
      'git init -q && git commit -q --allow-empty -m x && git log --format="%an %s" && python3 -c "print(42)"',
    );
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('FrogNano x\n42\n');
  });

  it('reports a missing bwrap binary clearly', async () => {
    const bad = await BwrapSandbox.create(dir, { bwrapPath: '/nonexistent/bwrap' });
    try {
      const r = await bad.exec('true');
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr).toMatch(/nonexistent\/bwrap.*No such file/);
    } finally {
      await bad.close();
    }
  });
});
