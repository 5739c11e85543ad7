/**
 * Jest environment for tests that run onnxruntime-node.
 *
 * Jest runs each test file in its own vm context with its own typed-array constructors, but the native
 * onnxruntime addon creates output arrays in Node's main context; onnxruntime-common's `instanceof Float32Array`
 * check then fails ("A float32 tensor's data must be type of function Float32Array()"). Sharing the main
 * context's typed-array constructors with the test context makes both sides agree. Only tests are affected;
 * a normal Node process has a single context.
 */
const { TestEnvironment } = require('jest-environment-node');

const SHARED = [
  'ArrayBuffer',
  'SharedArrayBuffer',
  'DataView',
  'Int8Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'Int16Array',
  'Uint16Array',
  'Int32Array',
  'Uint32Array',
  'Float32Array',
  'Float64Array',
  'BigInt64Array',
  'BigUint64Array',
];

class OnnxEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of SHARED) this.global[name] = globalThis[name];
  }
}

module.exports = OnnxEnvironment;
