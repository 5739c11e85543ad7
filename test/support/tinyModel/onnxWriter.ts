/** A minimal ONNX graph writer (nodes, initializers, shared constants) and the seeded PRNG the weights come from. */
import onnxProto from 'onnx-proto';

export const { onnx } = onnxProto;
type NodeProto = InstanceType<typeof onnx.NodeProto>;
type TensorProto = InstanceType<typeof onnx.TensorProto>;
export type ValueInfoProto = InstanceType<typeof onnx.ValueInfoProto>;
export type GraphProto = InstanceType<typeof onnx.GraphProto>;
type AttributeProto = InstanceType<typeof onnx.AttributeProto>;

/** mulberry32: tiny, fast, seedable; good enough for weights that only need to be reproducible. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const F32 = onnx.TensorProto.DataType.FLOAT;
export const I64 = onnx.TensorProto.DataType.INT64;
export const BOOL = onnx.TensorProto.DataType.BOOL;

export type Dim = number | string;

export function valueInfo(name: string, elemType: number, dims?: Dim[]): ValueInfoProto {
  const shape = dims
    ? { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) }
    : undefined;
  return onnx.ValueInfoProto.create({ name, type: { tensorType: { elemType, shape } } });
}

type AttrValue = number | number[] | GraphProto | { float: number };

function attribute(name: string, v: AttrValue): AttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof v === 'number') return onnx.AttributeProto.create({ name, type: T.INT, i: v });
  if (Array.isArray(v)) return onnx.AttributeProto.create({ name, type: T.INTS, ints: v });
  if ('float' in v) return onnx.AttributeProto.create({ name, type: T.FLOAT, f: v.float });
  return onnx.AttributeProto.create({ name, type: T.GRAPH, g: v });
}

export class GraphWriter {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private counter = 0;
  private readonly consts = new Map<string, string>();

  constructor(private readonly prefix = '') {}

  fresh(hint: string): string {
    return `${this.prefix}${hint}_${this.counter++}`;
  }

  /** Adds a node; returns its output names (named `outputs` when given, fresh ones otherwise). */
  op(type: string, inputs: string[], attrs: Record<string, AttrValue> = {}, outputs: number | string[] = 1): string[] {
    const outs = typeof outputs === 'number' ? Array.from({ length: outputs }, () => this.fresh(type)) : outputs;
    this.nodes.push(
      onnx.NodeProto.create({
        opType: type,
        name: this.fresh(`n_${type}`),
        input: inputs,
        output: outs,
        attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
      }),
    );
    return outs;
  }

  /** Single-output shorthand. */
  o(type: string, inputs: string[], attrs: Record<string, AttrValue> = {}, output?: string): string {
    return this.op(type, inputs, attrs, output ? [output] : 1)[0]!;
  }

  weight(name: string, dims: number[], data: Float32Array): string {
    this.initializers.push(
      onnx.TensorProto.create({
        name,
        dims,
        dataType: F32,
        rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      }),
    );
    return name;
  }

  i64(values: number[], dims: number[] = [values.length]): string {
    const key = `i64:${dims.join('x')}:${values.join(',')}`;
    const existing = this.consts.get(key);
    if (existing) return existing;
    const name = this.fresh('const_i64');
    const data = BigInt64Array.from(values.map((v) => BigInt(v)));
    this.initializers.push(
      onnx.TensorProto.create({ name, dims, dataType: I64, rawData: new Uint8Array(data.buffer) }),
    );
    this.consts.set(key, name);
    return name;
  }

  f32(values: number[], dims: number[] = [values.length]): string {
    const key = `f32:${dims.join('x')}:${values.join(',')}`;
    const existing = this.consts.get(key);
    if (existing) return existing;
    const name = this.weight(this.fresh('const_f32'), dims, Float32Array.from(values));
    this.consts.set(key, name);
    return name;
  }
}
