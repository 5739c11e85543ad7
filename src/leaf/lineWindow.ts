import { StringDecoder } from 'node:string_decoder';

/**
 * Read's numbered lines for a file too large to load whole, taken from a stream. The result is what Read makes of
 * the whole text (the same line breaks `\r\n`, `\n`, `\r`; `N. text` lines joined by newlines after `prefix`), but
 * memory stays bounded by `maxChars` and one chunk whatever the file's size or line lengths: text past `maxChars`
 * is only counted, so the caller's `[truncated K chars]` marker is exact.
 */
export interface LineWindowOptions {
  /** Put before the first line (Read's `path\n`); counts towards maxChars. */
  prefix: string;
  /** First line, 1-based. */
  offset: number;
  /** Number of lines. */
  limit: number;
  /** Characters kept; the rest is counted in droppedChars. */
  maxChars: number;
  /** Give up (complete=false) after this many bytes without finishing the window: reading on would take too long. */
  maxScanBytes: number;
  /** A NUL byte in this many leading bytes marks the file binary (Read's own test). */
  binaryProbeBytes: number;
}

export type LineWindowResult =
  | { kind: 'lines'; text: string; droppedChars: number }
  | { kind: 'binary' }
  | { kind: 'scan_limit'; scannedBytes: number };

const LF = 0x0a;
const CR = 0x0d;

export async function readLineWindow(source: AsyncIterable<Buffer>, o: LineWindowOptions): Promise<LineWindowResult> {
  const last = o.offset + o.limit - 1;
  let line = 1;
  let text = o.prefix;
  let dropped = 0;
  let decoder: StringDecoder | undefined; // set while a line inside the window is being written
  let pendingCR = false; // a chunk ended in \r: a \n starting the next one belongs to the same break
  let scanned = 0;
  let probed = 0;
  let done = last < o.offset;

  const emit = (s: string) => {
    const room = o.maxChars - text.length;
    if (s.length <= room) text += s;
    else {
      if (room > 0) text += s.slice(0, room);
      dropped += s.length - Math.max(room, 0);
    }
  };
  const inWindow = () => line >= o.offset && line <= last;
  const startLine = () => {
    emit(`${line > o.offset ? '\n' : ''}${line}. `);
    decoder = new StringDecoder('utf8');
  };
  const content = (buf: Buffer, from: number, to: number) => {
    if (from === to || !inWindow()) return;
    if (!decoder) startLine();
    emit(decoder!.write(buf.subarray(from, to)));
  };
  const endLine = () => {
    if (inWindow()) {
      if (!decoder) startLine();
      emit(decoder!.end());
      decoder = undefined;
    }
    line++;
    if (line > last) done = true;
  };

  for await (const chunk of source) {
    // Read looks at the same leading bytes as for a whole file, even when the window ends before them.
    if (probed < o.binaryProbeBytes) {
      if (chunk.subarray(0, o.binaryProbeBytes - probed).includes(0)) return { kind: 'binary' };
      probed += Math.min(chunk.length, o.binaryProbeBytes - probed);
    }
    if (done) {
      if (probed >= o.binaryProbeBytes) break;
      continue;
    }
    const budget = o.maxScanBytes - scanned;
    const buf = chunk.length > budget ? chunk.subarray(0, Math.max(budget, 0)) : chunk;
    scanned += buf.length;
    let i = 0;
    if (pendingCR) {
      pendingCR = false;
      if (buf[0] === LF) i = 1;
    }
    // Next \n and next \r, each searched again only once passed (no rescans of a chunk without \r).
    let nextLf = buf.indexOf(LF, i);
    let nextCr = buf.indexOf(CR, i);
    while (i < buf.length && !done) {
      const j = nextLf < 0 ? nextCr : nextCr < 0 ? nextLf : Math.min(nextLf, nextCr);
      if (j < 0) {
        content(buf, i, buf.length);
        i = buf.length;
        break;
      }
      content(buf, i, j);
      let end = j;
      if (buf[j] === CR) {
        if (j + 1 >= buf.length) pendingCR = true;
        else if (buf[j + 1] === LF) end = j + 1;
      }
      endLine();
      i = end + 1;
      if (nextLf >= 0 && nextLf < i) nextLf = buf.indexOf(LF, i);
      if (nextCr >= 0 && nextCr < i) nextCr = buf.indexOf(CR, i);
    }
    if (done && probed >= o.binaryProbeBytes) break; // leaving the loop closes the stream: nothing more is read
    if (buf.length < chunk.length) return { kind: 'scan_limit', scannedBytes: scanned };
  }
  // The file ended inside a line without a final break: that line counts (an empty last "line" does not).
  if (!done && decoder) endLine();
  return { kind: 'lines', text, droppedChars: dropped };
}
