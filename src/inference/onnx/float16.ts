/**
 * IEEE half-precision helpers: fp16 exports take and return float16 tensors, which onnxruntime-node hands over
 * as raw 16-bit patterns (Uint16Array).
 */
import * as ort from 'onnxruntime-node';
import { ModelError } from '../types.js';

/**
 * Every float16 bit pattern's value, built on first use: a lookup per logit instead of a halfToFloat call
 * (for a 248K vocabulary, well under a millisecond per token rather than tens of milliseconds).
 */
let halfValues: Float32Array | undefined;
export function halfTable(): Float32Array {
  if (!halfValues) {
    halfValues = new Float32Array(0x10000);
    for (let h = 0; h < 0x10000; h++) halfValues[h] = halfToFloat(h);
  }
  return halfValues;
}

export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * Math.pow(2, -14) * (frac / 1024);
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * Math.pow(2, exp - 15) * (1 + frac / 1024);
}

/**
 * The embedding in the element type the decoder takes: hub exports pair an fp16 decoder with whichever embed
 * file the directory has, and onnxruntime does not convert inputs itself.
 */
export function castFloat(tensor: ort.Tensor, to: string | undefined): ort.Tensor {
  if (!to || tensor.type === to) return tensor;
  if (tensor.type === 'float32' && to === 'float16') {
    const src = tensor.data as Float32Array;
    const out = new Uint16Array(src.length);
    for (let i = 0; i < src.length; i++) out[i] = floatToHalf(src[i]!);
    return new ort.Tensor('float16', out, tensor.dims);
  }
  if (tensor.type === 'float16' && to === 'float32') {
    const src = tensor.data as Uint16Array;
    const table = halfTable();
    return new ort.Tensor(
      'float32',
      Float32Array.from(src, (h) => table[h]!),
      tensor.dims,
    );
  }
  throw new ModelError(`the embedding graph returns ${tensor.type} but the decoder takes ${to} inputs_embeds`);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE half-precision bits of `value`, rounded to nearest even (overflow to infinity, NaN kept). */
export function floatToHalf(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // Subnormal: shift the mantissa (with its implicit leading 1) into place, rounding to nearest even.
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half++;
  return sign | half;
}
