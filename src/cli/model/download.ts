/**
 * One file from the Hub onto disk: resumable (a `<name>.incomplete` part is continued with `Range: bytes=N-`),
 * checksummed (LFS sha256 or git blob sha1 from the file list, and the Hub's X-Linked-Etag when it sends one)
 * and renamed into place only when the checksum matches. A file already in place is checked, not fetched again.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { authHeaders, hubStatusError, resolveUrl, type HubFile, type HubRepo } from './hubFiles.js';
import { setupError } from '../exitCodes.js';

/** Bytes received so far for one file (called at most every `intervalMs`, and once at the end). */
export type ProgressFn = (file: HubFile, done: number) => void;

/** A download that stops sending for this long is aborted (the part stays; the next pull resumes it). */
const STALL_MS = 60_000;

function newHash(file: HubFile): Hash {
  const h = createHash(file.checksum.kind === 'sha256' ? 'sha256' : 'sha1');
  if (file.checksum.kind === 'git-sha1') h.update(`blob ${file.size}\0`);
  return h;
}

async function sizeOf(p: string): Promise<number | undefined> {
  try {
    return (await stat(p)).size;
  } catch {
    return undefined;
  }
}

async function hashInto(h: Hash, p: string): Promise<void> {
  for await (const chunk of createReadStream(p)) h.update(chunk as Buffer);
}

/** Whether `p` holds exactly the file the Hub listed. */
async function isComplete(file: HubFile, p: string): Promise<boolean> {
  if ((await sizeOf(p)) !== file.size) return false;
  const h = newHash(file);
  await hashInto(h, p);
  return h.digest('hex') === file.checksum.hex;
}

async function request(hub: HubRepo, file: HubFile, from: number): Promise<{ res: Response; ctl: AbortController }> {
  const ctl = new AbortController();
  const headers: Record<string, string> = { ...authHeaders(hub), 'accept-encoding': 'identity' };
  if (from > 0) headers.range = `bytes=${from}-`;
  let res: Response;
  try {
    res = await fetch(resolveUrl(hub, file.path), { headers, signal: ctl.signal, redirect: 'follow' });
  } catch (err) {
    throw setupError(
      `cannot download ${file.path} (${(err as Error).message})`,
      'run the same command again to resume',
    );
  }
  return { res, ctl };
}

/** Where the body starts: 206 continues the part at `from`, 200 starts over (a server that ignores Range). */
function startOffset(res: Response, from: number, file: HubFile): number {
  if (res.status === 200) return 0;
  const m = res.headers.get('content-range')?.match(/^bytes (\d+)-/);
  if (res.status === 206 && m && Number(m[1]) === from) return from;
  throw setupError(
    `the Hub answered an unusable range for ${file.path} (${res.status})`,
    'delete the .incomplete file and retry',
  );
}

function checkLinkedEtag(res: Response, file: HubFile): void {
  const etag = res.headers.get('x-linked-etag')?.replace(/^W\//, '').replace(/"/g, '');
  if (etag && file.checksum.kind === 'sha256' && /^[0-9a-f]{64}$/.test(etag) && etag !== file.checksum.hex) {
    throw setupError(`${file.path}: the Hub's X-Linked-Etag ${etag} differs from the listed sha256`, 'retry later');
  }
}

async function writeBody(
  res: Response,
  ctl: AbortController,
  part: string,
  start: number,
  h: Hash,
  done: (n: number) => void,
) {
  const out = createWriteStream(part, { flags: start > 0 ? 'a' : 'w' });
  let stall = setTimeout(() => ctl.abort(), STALL_MS);
  let n = start;
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      clearTimeout(stall);
      stall = setTimeout(() => ctl.abort(), STALL_MS);
      h.update(chunk);
      n += chunk.length;
      if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
      done(n);
    }
  } finally {
    clearTimeout(stall);
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  }
  return n;
}

/** Downloads `file` into `dir`; returns 'present' when it was already there and whole. */
export async function downloadFile(hub: HubRepo, file: HubFile, dir: string, progress: ProgressFn) {
  const target = path.join(dir, file.path);
  const part = `${target}.incomplete`;
  if (await isComplete(file, target)) return 'present' as const;
  await mkdir(path.dirname(target), { recursive: true });
  let have = (await sizeOf(part)) ?? 0;
  if (have > file.size) {
    await rm(part);
    have = 0;
  }
  const { res, ctl } = await request(hub, file, have);
  if (res.status === 416 && have === file.size) {
    await res.body?.cancel();
    if (!(await isComplete(file, part))) return await discardBad(part, file);
  } else {
    if (res.status !== 200 && res.status !== 206) throw hubStatusError(hub, res.status, file.path);
    checkLinkedEtag(res, file);
    have = startOffset(res, have, file);
    const h = newHash(file);
    if (have > 0) await hashInto(h, part);
    let n: number;
    try {
      n = await writeBody(res, ctl, part, have, h, (d) => progress(file, d));
    } catch (err) {
      throw setupError(
        `download of ${file.path} stopped (${(err as Error).message})`,
        'run the same command again to resume',
      );
    }
    if (n !== file.size)
      throw setupError(`${file.path}: got ${n} of ${file.size} bytes`, 'run the same command again to resume');
    if (h.digest('hex') !== file.checksum.hex) return await discardBad(part, file);
  }
  await rename(part, target);
  return 'downloaded' as const;
}

async function discardBad(part: string, file: HubFile): Promise<never> {
  await rm(part, { force: true });
  throw setupError(
    `${file.path}: ${file.checksum.kind} checksum mismatch; the partial file was removed`,
    'run the same command again',
  );
}
