/** The per-step copy figures docs/benchmarks.md quotes, from bench/gpu-state-bytes.ts's arithmetic. */
import {
  FROGNANO_4B,
  inProcessStepBytes,
  kvBytesPerToken,
  layerCounts,
  linearStateBytes,
} from '../../bench/gpu-state-bytes.js';

const MiB = 2 ** 20;

describe('host<->device bytes per decode step, FrogNano-4B', () => {
  test('layer split and state sizes from the config', () => {
    expect(layerCounts(FROGNANO_4B)).toEqual({ full: 8, linear: 24 });
    expect(kvBytesPerToken(FROGNANO_4B, 2)).toBe(32 * 1024); // 8 layers x K,V x 4 heads x 256 x 2 B
    // conv: (2*16*128 + 32*128) channels x 4; recurrent: 32 x 128 x 128; 24 layers, 2 B each
    expect(linearStateBytes(FROGNANO_4B, 2)).toBe(24 * (8192 * 4 + 32 * 128 * 128) * 2);
    expect(linearStateBytes(FROGNANO_4B, 2) / MiB).toBe(25.5);
  });

  test('grows with the context: ~0.55 GiB at 8K, ~2.1 GiB at 32K, ~8.1 GiB at 128K', () => {
    const total = (ctx: number) => {
      const s = inProcessStepBytes(FROGNANO_4B, ctx, 2);
      return (s.toDevice + s.toHost) / 2 ** 30;
    };
    expect(total(8192)).toBeCloseTo(0.551, 2);
    expect(total(32768)).toBeCloseTo(2.051, 2);
    expect(total(131072)).toBeCloseTo(8.051, 2);
  });

  test('an explicit layer_types list wins over the interval', () => {
    expect(
      layerCounts({ ...FROGNANO_4B, num_hidden_layers: 2, layer_types: ['full_attention', 'full_attention'] }),
    ).toEqual({ full: 2, linear: 0 });
  });
});
