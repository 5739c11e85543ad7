import { readLineWindow } from '../../src/leaf/lineWindow.js';
import { truncateHead } from '../../src/leaf/text.js';

/** What Read makes of a file it loads whole (tools.ts): the reference the streamed window must equal. */
function wholeRead(buf: Buffer, offset: number, limit: number, maxChars: number): string {
  const lines = buf.toString('utf8').split(/\r\n|\n|\r/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const end = Math.min(lines.length, offset - 1 + limit);
  const numbered: string[] = [];
  for (let i = offset - 1; i < end; i++) numbered.push(`${i + 1}. ${lines[i]}`);
  return truncateHead(`f.txt\n${numbered.join('\n')}`, maxChars);
}

async function* chunks(buf: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

async function streamed(buf: Buffer, size: number, offset: number, limit: number, maxChars: number, maxScanBytes = 1 << 30) {
  const r = await readLineWindow(chunks(buf, size), { prefix: 'f.txt\n', offset, limit, maxChars, maxScanBytes, binaryProbeBytes: 8000 });
  return r.kind === 'lines' ? truncateHead(r.text, maxChars, r.droppedChars) : r.kind;
}

const SAMPLES: Record<string, Buffer> = {
  empty: Buffer.alloc(0),
  'one line, no final break': Buffer.from('only'),
  'breaks of every kind': Buffer.from('a\r\nb\rc\n\nd\r\r\ne\n'),
  'ends in a bare CR': Buffer.from('a\nb\r'),
  'blank lines at the end': Buffer.from('a\n\n\n'),
  'multi-byte characters': Buffer.from('héllo wörld\n日本語のテキスト\n🐸🐸🐸\nend'),
  // A lone lead byte, a stray continuation byte, and a lead byte cut by a line break.
  'invalid UTF-8': Buffer.from([0x61, 0xe2, 0x0a, 0x80, 0x62, 0x0a, 0xf0, 0x9f, 0x0d, 0x0a, 0x63]),
  'long lines': Buffer.from(`${'x'.repeat(300)}\n${'é'.repeat(200)}\r\n${'z'.repeat(50)}`),
};

describe('readLineWindow', () => {
  test.each(Object.keys(SAMPLES))('%s: equals the whole-file Read for every window, chunk size and cap', async (name) => {
    const buf = SAMPLES[name];
    for (const size of [1, 2, 3, 5, 64, 4096]) {
      for (const [offset, limit] of [[1, 1], [1, 3], [2, 2], [3, 10], [1, 100], [6, 1], [40, 2]]) {
        for (const maxChars of [20_000, 25, 7]) {
          expect({ size, offset, limit, maxChars, out: await streamed(buf, size, offset, limit, maxChars) }).toEqual({
            size, offset, limit, maxChars, out: wholeRead(buf, offset, limit, maxChars),
          });
        }
      }
    }
  });

  test('stops reading at the end of the window', async () => {
    let pulled = 0;
    async function* endless(): AsyncGenerator<Buffer> {
      for (;;) {
        pulled++;
        yield Buffer.from('line\n'.repeat(10));
      }
    }
    const r = await readLineWindow(endless(), { prefix: '', offset: 15, limit: 3, maxChars: 1000, maxScanBytes: 1 << 30, binaryProbeBytes: 100 });
    expect(r).toEqual({ kind: 'lines', text: '15. line\n16. line\n17. line', droppedChars: 0 });
    expect(pulled).toBe(2);
    // ... unless the binary probe is not done yet: then only until it is (8000 bytes = 160 chunks of 50).
    pulled = 0;
    await readLineWindow(endless(), { prefix: '', offset: 1, limit: 1, maxChars: 1000, maxScanBytes: 1 << 30, binaryProbeBytes: 8000 });
    expect(pulled).toBe(160);
  });

  test('gives up after maxScanBytes, and finds NULs in the leading bytes across chunks', async () => {
    const far = Buffer.from('0123456789\n'.repeat(100));
    expect(await readLineWindow(chunks(far, 64), { prefix: '', offset: 90, limit: 1, maxChars: 100, maxScanBytes: 500, binaryProbeBytes: 10 }))
      .toEqual({ kind: 'scan_limit', scannedBytes: 500 });
    expect(await streamed(far, 64, 40, 1, 100, 500)).toBe('f.txt\n40. 0123456789');
    const bin = Buffer.concat([Buffer.from('text\n'.repeat(3)), Buffer.from([0]), Buffer.from('more\n')]);
    expect(await streamed(bin, 4, 1, 1, 100)).toBe('binary');
    // A NUL after the probed bytes is text, as for a whole read.
    expect(await readLineWindow(chunks(bin, 4), { prefix: '', offset: 1, limit: 1, maxChars: 100, maxScanBytes: 1000, binaryProbeBytes: 8 }))
      .toEqual({ kind: 'lines', text: '1. text', droppedChars: 0 });
  });
});
