export default async function globalTeardown() {
  const child = globalThis.__FROGNANO_TEST_REDIS__;
  if (child && child.exitCode === null) child.kill('SIGTERM');
}
