import { Readable } from 'node:stream';
import { HostFilesSandbox } from './hostFilesSandbox.js';
import { FileTooLargeError, SandboxPathError, type ExecOptions, type ExecResult, type FileEntry, type ReadFileOptions } from './types.js';

/**
 * The file operations of the docker and bwrap sandboxes, done inside the sandbox boundary by a small stdlib Python
 * helper run as the sandbox user: paths resolve in the sandbox's own view (a symlink to /etc/shadow names the
 * sandbox's file, a link to a host path names nothing), and the host never opens, stats, lists or writes a path
 * the model chose. Contents travel base64-encoded over the command's stdin and stdout.
 */
const HELPER = String.raw`
import os, stat, sys
op, root = sys.argv[1], sys.argv[2]
# The answer: one header line ("ok SIZE EOF" or "error KIND SIZE MESSAGE"), then the payload (base64 or JSON).
def out(size=0, eof=True, payload=''):
    sys.stdout.write('ok %d %d\n%s' % (size, 1 if eof else 0, payload)); sys.exit(0)
def fail(kind, msg, size=0):
    sys.stdout.write('error %s %d %s\n' % (kind, size, msg.replace('\n', ' '))); sys.exit(0)
def resolve(rel):
    p = rel.replace('\\', '/')
    if p == root or p.startswith(root + '/'):
        p = p[len(root):]
    p = p.lstrip('/')
    ab = os.path.normpath(os.path.join(root, p))
    if ab != root and not ab.startswith(root + '/'):
        fail('path', 'path %s is outside the repository' % rel)
    cur, rest = ab, []
    while not os.path.lexists(cur) and cur != root:
        rest.append(os.path.basename(cur)); cur = os.path.dirname(cur)
    real = os.path.join(os.path.realpath(cur), *reversed(rest))
    rroot = os.path.realpath(root)
    if real != rroot and not real.startswith(rroot + '/'):
        fail('path', 'path %s leads outside the repository (symlink)' % rel)
    return ab, real
def open_regular(rel):
    ab, real = resolve(rel)
    try:
        st = os.stat(real)
    except OSError:
        fail('missing', 'File not found: %s' % rel)
    if stat.S_ISDIR(st.st_mode):
        fail('dir', '%s is a directory, not a file' % rel)
    if not stat.S_ISREG(st.st_mode):
        fail('special', '%s is not a regular file' % rel)
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        fail('special', '%s is not a regular file' % rel)
    return fd
if op == 'read':
    rel, start, length, whole = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == '1'
    fd = open_regular(rel)
    size = os.fstat(fd).st_size
    if whole and size > length:
        fail('too_large', '', size)
    os.lseek(fd, start, 0)
    chunks, total = [], 0
    while total <= length:
        b = os.read(fd, min(1 << 20, length + 1 - total))
        if not b:
            break
        chunks.append(b); total += len(b)
    data = b''.join(chunks)
    if whole and len(data) > length:
        fail('too_large', '', len(data))
    import binascii
    out(size, len(data) <= length, binascii.b2a_base64(data[:length], newline=False).decode())
elif op == 'write':
    rel = sys.argv[3]
    ab, real = resolve(rel)
    if real == os.path.realpath(root):
        fail('path', 'cannot write to the repository root')
    import binascii
    data = binascii.a2b_base64(sys.stdin.buffer.read())
    if os.path.isdir(real):
        fail('dir', '%s is a directory, not a file' % rel)
    os.makedirs(os.path.dirname(real), exist_ok=True)
    try:
        fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY, 0o666)
    except OSError as e:
        fail('special', '%s is not a regular file' % rel) if e.errno in (6, 21) else fail('os', '%s: %s' % (rel, e.strerror))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        fail('special', '%s is not a regular file' % rel)
    os.ftruncate(fd, 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)
    out()
elif op == 'list':
    rel, limit = sys.argv[3], int(sys.argv[4])
    ab, real = resolve(rel)
    if not os.path.lexists(real):
        fail('missing', 'Directory not found: %s' % rel)
    if not os.path.isdir(real):
        fail('notdir', '%s is not a directory' % rel)
    files, truncated = [], False
    def walk(d, shown):
        global truncated
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            if truncated:
                return
            if e.name == '.git':
                continue
            name = shown + '/' + e.name if shown else e.name
            if e.is_dir(follow_symlinks=False):
                walk(e.path, name)
            elif e.is_file(follow_symlinks=False) or e.is_symlink():
                if len(files) >= limit:
                    truncated = True
                    return
                files.append([name, e.stat(follow_symlinks=False).st_size if e.is_file(follow_symlinks=False) else 0])
    base = os.path.relpath(ab, root)
    walk(real, '' if base == '.' else base)
    import json
    out(0, not truncated, json.dumps(files))
`;

type Spawn = (argv: string[], options?: ExecOptions) => Promise<ExecResult>;

interface HelperAnswer {
  error?: string;
  size: number;
  eof: boolean;
  payload: string;
}

function parseAnswer(stdout: string): HelperAnswer {
  const nl = stdout.indexOf('\n');
  const head = nl < 0 ? stdout : stdout.slice(0, nl);
  const ok = /^ok (\d+) ([01])$/.exec(head);
  if (ok) return { size: Number(ok[1]), eof: ok[2] === '1', payload: stdout.slice(nl + 1) };
  const err = /^error (\w+) (\d+) (.*)$/.exec(head);
  if (err) return { error: err[1], size: Number(err[2]), eof: true, payload: err[3] };
  throw new Error(`the sandbox's file helper answered ${JSON.stringify(head.slice(0, 100))}`);
}

const TIMEOUT_MS = 60_000;
const STREAM_CHUNK = 4 * 1024 * 1024;

export class InsideFiles {
  constructor(
    private readonly spawn: Spawn,
    /** The workspace as commands see it (/workspace). */
    private readonly workdir: string,
  ) {}

  private async run(args: string[], stdin?: string, maxOutputBytes = 1024 * 1024): Promise<HelperAnswer> {
    // -I -S: no user site, no site module, no environment variables: a quicker start, and nothing the workspace
    // holds (a sitecustomize.py, say) runs in the helper.
    const r = await this.spawn(['python3', '-I', '-S', '-c', HELPER, ...args.slice(0, 1), this.workdir, ...args.slice(1)], {
      stdin,
      timeoutMs: TIMEOUT_MS,
      maxOutputBytes,
    });
    if (r.exitCode !== 0 || r.stdoutTruncated > 0) {
      const why = r.timedOut ? `no answer within ${TIMEOUT_MS / 1000}s` : (r.stderr.trim().split('\n').pop() ?? '') || `exit ${r.exitCode}`;
      throw new Error(`the sandbox's file helper failed: ${why}`);
    }
    const a = parseAnswer(r.stdout);
    if (a.error === 'path') throw new SandboxPathError(a.payload);
    if (a.error && a.error !== 'too_large') throw new Error(a.payload);
    return a;
  }

  async readFile(rel: string, opts: ReadFileOptions = {}): Promise<Buffer> {
    const max = Math.min(opts.maxBytes ?? 256 * 1024 * 1024, 256 * 1024 * 1024);
    const a = await this.run(['read', rel, '0', String(max), '1'], undefined, Math.ceil((max * 4) / 3) + 4096);
    if (a.error === 'too_large') throw new FileTooLargeError(rel, a.size, max);
    return Buffer.from(a.payload, 'base64');
  }

  /** Reads the file a chunk (one helper run) at a time, as the consumer asks for more. */
  async openFileStream(rel: string): Promise<Readable> {
    // The first chunk also checks the path now, so a bad one fails here rather than in the stream.
    const first = await this.chunk(rel, 0);
    let offset = first.buf.length;
    let eof = first.eof || first.buf.length === 0;
    let pending: Buffer | null = first.buf;
    const fetch = (at: number) => this.chunk(rel, at);
    return new Readable({
      highWaterMark: STREAM_CHUNK,
      read() {
        if (pending) {
          const b = pending;
          pending = null;
          if (b.length) this.push(b);
          if (eof) this.push(null);
          return;
        }
        if (eof) {
          this.push(null);
          return;
        }
        fetch(offset).then(
          (c) => {
            offset += c.buf.length;
            eof = c.eof || c.buf.length === 0;
            if (c.buf.length) this.push(c.buf);
            if (eof) this.push(null);
          },
          (err: Error) => this.destroy(err),
        );
      },
    });
  }

  private async chunk(rel: string, offset: number): Promise<{ buf: Buffer; eof: boolean }> {
    const a = await this.run(['read', rel, String(offset), String(STREAM_CHUNK), '0'], undefined, Math.ceil((STREAM_CHUNK * 4) / 3) + 4096);
    return { buf: Buffer.from(a.payload, 'base64'), eof: a.eof };
  }

  async writeFile(rel: string, data: string | Buffer): Promise<void> {
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    await this.run(['write', rel], buf.toString('base64'));
  }

  async listFiles(dir = '.', limit = 100_000): Promise<{ files: FileEntry[]; truncated: boolean }> {
    const a = await this.run(['list', dir, String(limit)], undefined, 64 * 1024 * 1024);
    const files = JSON.parse(a.payload) as Array<[string, number]>;
    return { files: files.map(([p, size]) => ({ path: p, size })), truncated: !a.eof };
  }
}

/**
 * A sandbox whose file operations run inside it (docker, bwrap): the workspace still lives on the host (HostFiles
 * resolves the `cwd` the runner's own code passes), but every path the model may have chosen is opened by InsideFiles.
 */
export abstract class InsideFilesSandbox extends HostFilesSandbox {
  abstract spawn(argv: string[], options?: ExecOptions): Promise<ExecResult>;

  private insideFiles?: InsideFiles;

  private get inside(): InsideFiles {
    this.insideFiles ??= new InsideFiles((argv, o) => this.spawn(argv, o), this.workdir);
    return this.insideFiles;
  }

  override readFile(p: string, options?: ReadFileOptions): Promise<Buffer> {
    return this.inside.readFile(p, options);
  }

  override openFileStream(p: string): Promise<Readable> {
    return this.inside.openFileStream(p);
  }

  override async writeFile(p: string, data: string | Buffer): Promise<void> {
    this.assertUsable();
    await this.inside.writeFile(p, data);
  }

  override listFiles(dir?: string, limit?: number): Promise<{ files: FileEntry[]; truncated: boolean }> {
    return this.inside.listFiles(dir, limit);
  }
}
