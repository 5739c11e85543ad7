/**
 * Cost of secret scrubbing in the ops logger: lines per second written to a null stream by the
 * frognano logger versus plain pino with the same options minus scrubbing.
 *   npx tsx bench/ops-logger.ts
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { createLogger } from '../src/ops/logger.js';

const sink = () =>
  new Writable({
    write(_c, _e, cb) {
      cb();
    },
  });

const N = 50_000;
const fields = {
  jobId: 'octo/hello#7@1',
  turn: 12,
  tool: { name: 'Bash', command: 'npm test -- --runInBand', exitCode: 1 },
  remote: 'https://github.com/octo/hello.git',
  tokens: { prompt: 9000, completion: 400 },
};

function run(name: string, log: pino.Logger): void {
  for (let i = 0; i < 2000; i++) log.info(fields, 'warm-up');
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) log.info(fields, `tool finished after ${i} ms`);
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(
    `${name.padEnd(28)} ${Math.round(N / s)
      .toLocaleString('en-US')
      .padStart(9)} lines/s  (${((s / N) * 1e6).toFixed(1)} µs/line)`,
  );
}

run('pino (no scrubbing)', pino({ timestamp: pino.stdTimeFunctions.isoTime }, sink()));
run('frognano logger (scrubbed)', createLogger({ destination: sink() }));
