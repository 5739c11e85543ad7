// nock patches Node's shared http module, and jest --runInBand runs every test file in one process: a file that
// leaves nock active makes later files' unix-socket requests (dockerode -> /var/run/docker.sock) go to
// 127.0.0.1:80. After each file, put http back. The import returns the file's own nock instance when it used one.
import { afterAll } from '@jest/globals';

afterAll(async () => {
  const { default: nock } = await import('nock');
  nock.cleanAll();
  nock.enableNetConnect();
  nock.restore();
});
