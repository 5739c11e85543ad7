import { describe, expect, it } from '@jest/globals';
import { jsonPieces, stringifyBounded } from '../../src/util/boundedJson.js';

describe('stringifyBounded', () => {
  it('writes what JSON.stringify writes for ordinary values', () => {
    const values: unknown[] = [
      { a: 1, b: 'x"y\n\u202e', c: [true, null, 2.5, { d: [] }], e: {} },
      [1, 'two', [3, [4]]],
      'plain',
      42,
      null,
      { skip: undefined, f: () => 1, keep: 0, inf: Infinity, nan: NaN, arr: [undefined, Infinity] },
      { when: new Date(0) },
    ];
    for (const v of values)
      expect(stringifyBounded(v, { maxDepth: Infinity })).toEqual({
        text: JSON.stringify(v),
        depthCut: false,
        truncated: false,
      });
  });

  it('serialises arrays nested 6,000 deep (JSON.stringify overflows the stack) as depth-cut text', () => {
    const deep: unknown = JSON.parse(`${'['.repeat(6000)}1${']'.repeat(6000)}`);
    expect(() => JSON.stringify(deep)).toThrow(/call stack/);
    const r = stringifyBounded({ extra: deep }, { maxDepth: 20 });
    expect(r.depthCut).toBe(true);
    expect(r.text).toBe(`{"extra":${'['.repeat(19)}"[…]"${']'.repeat(19)}}`);
    expect(JSON.parse(r.text)).toBeTruthy();
  });

  it('walks 100,000 levels without a depth bound, iteratively', () => {
    const n = 100_000;
    const deep: unknown = JSON.parse(`${'['.repeat(n)}${']'.repeat(n)}`);
    const text = [...jsonPieces(deep, { maxDepth: Infinity })].join('');
    expect(text.length).toBe(2 * n);
  });

  it('stops at maxChars and says so', () => {
    const r = stringifyBounded({ big: 'x'.repeat(100_000) }, { maxChars: 1000 });
    expect(r.truncated).toBe(true);
    expect(r.text).toHaveLength(1000);
    expect(stringifyBounded({ a: 1 }, { maxChars: 7 })).toEqual({ text: '{"a":1}', depthCut: false, truncated: false });
  });

  it('cuts a cycle instead of looping', () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    expect(stringifyBounded(a, { maxDepth: Infinity }).text).toBe('{"name":"a","self":"{…}"}');
  });
});
