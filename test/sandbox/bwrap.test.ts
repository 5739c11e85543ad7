import { execFile } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { BwrapSandbox, searchableBy } from '../../src/sandbox/bwrap.js';
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
    expect(r.stdout).not.toMatch(
      /present \/etc\/shadow|present \/etc\/ssh|present \/etc\/docker|present \/root|docker\.sock|present \/run\b/,
    );
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

  it("binds the host's scanner bundles read-only where the image has them, and node runs ESLint there", async () => {
    const r = await sb.exec(
      'cd /opt/frognano/scanners/eslint && node -e "console.log(require(\'eslint/package.json\').version)" && ' +
        '(touch x 2>/dev/null && echo writable || echo read-only)',
    );
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^9\.39\.\d+\nread-only\n$/);
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

const itAsRoot = process.getuid?.() === 0 ? it : it.skip;

describe('BwrapSandbox workspace location', () => {
  itAsRoot(
    'binds the scanner bundles only where the sandbox user can reach them (else no sandbox would start)',
    async () => {
      const parent = await mkdtemp(path.join(os.tmpdir(), 'fn-bwrap-scanners-')); // mode 700, owned by root
      try {
        const dir = path.join(parent, 'runner', 'scanners');
        await mkdir(dir, { recursive: true });
        expect(searchableBy(dir, { uid: 1000, gid: 1000 })).toBe(false);
        await chmod(parent, 0o755);
        expect(searchableBy(dir, { uid: 1000, gid: 1000 })).toBe(true);
      } finally {
        await rm(parent, { recursive: true, force: true });
      }
    },
  );

  itAsRoot('explains when the sandbox user cannot reach the workspace', async () => {
    const parent = await mkdtemp(path.join(os.tmpdir(), 'fn-bwrap-private-')); // mode 700, owned by root
    try {
      const ws = path.join(parent, 'ws');
      await mkdir(ws);
      await expect(BwrapSandbox.create(ws)).rejects.toThrow(
        new RegExp(
          `sandbox user 1000 cannot reach the workspace ${ws}: ${parent} is not searchable by it \\(mode 700\\)`,
        ),
      );
      // Nothing was chowned on the way out.
      expect((await stat(ws)).uid).toBe(0);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });
});

describe('BwrapSandbox under a non-root runner', () => {
  // As root the suites above take the setpriv path; this runs the sandbox from a uid-1000 process, as a
  // non-root runner would (its own uid mapped in, nothing chowned).
  itAsRoot('maps the runner uid, writes as it, and still enforces the process limit', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-bwrap-nonroot-'));
    try {
      await chown(dir, 1000, 1000);
      const { stdout } = await promisify(execFile)(
        'setpriv',
        [
          '--reuid=1000',
          '--regid=1000',
          '--clear-groups',
          process.execPath,
          '--import',
          'tsx',
          path.join(import.meta.dirname, 'fixtures/nonroot-bwrap.ts'),
          dir,
        ],
        { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir }, timeout: 90_000 },
      );
      const seen = JSON.parse(stdout) as { id: string; idErr: string; bombErr: string; fork: string };
      expect(seen.id).toBe('1000\n1000\n');
      expect(seen.idErr).toBe('');
      expect(seen.bombErr).toMatch(/fork: (retry: )?Resource temporarily unavailable/);
      expect(seen.fork).toBe('contained\n');
      const st = await stat(path.join(dir, 'made.txt'));
      expect([st.uid, st.gid]).toEqual([1000, 1000]);
      expect((await stat(dir)).uid).toBe(1000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
