import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { DockerSandbox, reapStaleSandboxes } from '../../src/sandbox/docker/index.js';
import { LocalSandbox } from '../../src/sandbox/local.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { dockerForTests, TEST_IMAGE } from './support.js';

/** Binary stdin and stdout (set-up snapshots go in and out of a sandbox this way) on every kind of sandbox. */

const docker = await dockerForTests();
const LABELS = { 'dev.frognano.test': 'h-warm-binary-streams' };

function collector(): { sink: Writable; bytes(): Buffer } {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(c: Buffer, _e, cb) {
      chunks.push(c);
      cb();
    },
  });
  return { sink, bytes: () => Buffer.concat(chunks) };
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function describeStreams(name: string, make: (dir: string) => Promise<Sandbox>, skip = false): void {
  (skip ? describe.skip : describe)(`${name}: binary streams`, () => {
    let dir: string;
    let sb: Sandbox;
    beforeAll(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), `fn-warm-stream-${name}-`));
      sb = await make(dir);
    });
    afterAll(async () => {
      await sb?.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('pipes bytes in and out unchanged, through the clean shell', async () => {
      const data = randomBytes(3 * 1024 * 1024 + 17); // every byte value, NULs and invalid UTF-8 included
      const out = collector();
      const r = await sb.exec('cat > "$TMPDIR/blob" && sha256sum < "$TMPDIR/blob" >&2 && cat "$TMPDIR/blob"', {
        clean: true,
        stdinStream: Readable.from([data.subarray(0, 1000), data.subarray(1000)]),
        stdoutSink: out.sink,
        maxOutputBytes: 8 * 1024 * 1024,
        timeoutMs: 60_000,
      });
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr.split(' ')[0]).toBe(sha(data));
      expect(out.bytes().equals(data)).toBe(true);
      expect(r.stdoutTruncated).toBe(0);
    });

    it('caps what reaches the sink and counts the rest', async () => {
      const out = collector();
      const r = await sb.exec('head -c 3000000 /dev/zero', {
        clean: true,
        stdoutSink: out.sink,
        maxOutputBytes: 1024 * 1024,
        timeoutMs: 60_000,
      });
      expect(r.exitCode).toBe(0);
      expect(out.bytes().length).toBe(1024 * 1024);
      expect(r.stdoutTruncated).toBe(3000000 - 1024 * 1024);
    });
  });
}

describeStreams('local', async (dir) => new LocalSandbox(dir));
describeStreams('bwrap', (dir) => BwrapSandbox.create(dir));
describeStreams(
  'docker',
  async (dir) => DockerSandbox.create(dir, { image: TEST_IMAGE, labels: LABELS }, { docker: docker! }),
  !docker,
);

afterAll(async () => {
  if (docker) await reapStaleSandboxes(docker, 0, { labels: LABELS });
});
