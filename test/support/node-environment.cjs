/**
 * Jest environment of every test file.
 *
 * 1. Each jest worker gets its own Redis database: REDIS_URL (set or found by global-setup.js) gets the database
 *    number JEST_WORKER_ID, so files running at the same time in parallel workers (the `unit` project) never see each
 *    other's queues and keys, whatever prefix they use. Pub/sub channels are not per database; the one channel the
 *    bot uses (cancel requests) names the job, and job ids carry unique owners in the tests.
 * 2. onnxruntime-node:
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

/** Redis has 16 databases unless configured otherwise; 0 is left to whatever else uses the server. */
const REDIS_DATABASES = 16;

/** REDIS_URL with this worker's database, or the URL as it is when it already names one (set by hand). */
function workerRedisUrl(url, workerId) {
  const u = new URL(url);
  if (u.pathname && u.pathname !== '/') return url;
  const id = Number(workerId) || 1;
  u.pathname = `/${((id - 1) % (REDIS_DATABASES - 1)) + 1}`;
  return u.toString();
}

class TestEnvironmentPerWorker extends TestEnvironment {
  constructor(config, context) {
    // In the worker's own env too (before super() copies it into the test's): child processes a test starts
    // without an env of its own (the CLI, the runner) inherit the worker's, and must use the same database.
    process.env.REDIS_URL = workerRedisUrl(
      process.env.REDIS_URL || 'redis://127.0.0.1:6379',
      process.env.JEST_WORKER_ID,
    );
    super(config, context);
    for (const name of SHARED) this.global[name] = globalThis[name];
    this.global.process.env.REDIS_URL = process.env.REDIS_URL;
  }
}

module.exports = TestEnvironmentPerWorker;
