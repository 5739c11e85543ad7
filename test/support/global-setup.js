// Jest global setup: make `npm test` work on a fresh machine. If nothing answers on REDIS_URL
// (default redis://127.0.0.1:6379), start a throwaway redis-server on a free port for this run.
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';

function ping(url) {
  const u = new URL(url);
  return new Promise((resolve) => {
    const sock = net.connect({ host: u.hostname, port: Number(u.port || 6379) });
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => done(d.toString().startsWith('+PONG') || d.toString().startsWith('-NOAUTH')));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export default async function globalSetup() {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (await ping(url)) {
    process.env.REDIS_URL = url;
    return;
  }
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    throw new Error(
      `No Redis answers on ${url} and redis-server is not installed.\n` +
        'Install it (Debian/Ubuntu: apt-get install -y redis-server) or point REDIS_URL at a Redis server.',
    );
  }
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  globalThis.__FROGNANO_TEST_REDIS__ = child;
  const started = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100 && !(await ping(started)); i++) await new Promise((r) => setTimeout(r, 50));
  if (!(await ping(started))) throw new Error(`started redis-server on port ${port}, but it does not answer`);
  process.env.REDIS_URL = started;
  console.log(`\n[test setup] no Redis on ${url}; started redis-server on ${started} for this run`);
}
