import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { parseEnv } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDotEnv, updateDotEnv } from '../../src/util/dotenv.js';

describe('loadDotEnv', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'fn-dotenv-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('sets what is unset, keeps what the environment already has', () => {
    const file = join(dir, '.env');
    writeFileSync(
      file,
      [
        '# comment',
        'LOG_LEVEL=debug',
        'REDIS_URL=redis://from-file:6379',
        'QUOTED="a b # not a comment"',
        'EMPTY=',
        'PRIVATE_KEY="-----BEGIN KEY-----\\nabc\\n-----END KEY-----"',
        '',
      ].join('\n'),
    );
    const env: NodeJS.ProcessEnv = { REDIS_URL: 'redis://real:6379', EMPTY: 'kept' };
    expect(loadDotEnv(file, env).sort()).toEqual(['LOG_LEVEL', 'PRIVATE_KEY', 'QUOTED']);
    expect(env).toEqual({
      LOG_LEVEL: 'debug',
      REDIS_URL: 'redis://real:6379',
      QUOTED: 'a b # not a comment',
      EMPTY: 'kept',
      PRIVATE_KEY: '-----BEGIN KEY-----\nabc\n-----END KEY-----',
    });
  });

  test('no file: nothing set; an unreadable one: a clear error', () => {
    const env: NodeJS.ProcessEnv = {};
    expect(loadDotEnv(join(dir, '.env'), env)).toEqual([]);
    expect(env).toEqual({});
    mkdirSync(join(dir, 'dir.env'));
    expect(() => loadDotEnv(join(dir, 'dir.env'), env)).toThrow(`cannot read ${join(dir, 'dir.env')}: EISDIR`);
  });
});

describe('updateDotEnv (what the setup page writes)', () => {
  test('replaces and appends, keeps comments, ends with a newline so `echo X=y >> .env` is a line of its own', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fn-dotenv-'));
    try {
      const file = join(dir, '.env');
      writeFileSync(file, '# from deploy/env.example\nAPP_ID=\nREDIS_URL=redis://127.0.0.1:6379');
      const env: NodeJS.ProcessEnv = {};
      const pem = '-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n';
      updateDotEnv(file, { APP_ID: '4711', PRIVATE_KEY: `"${pem}"` }, env);
      updateDotEnv(file, { WEBHOOK_PROXY_URL: 'https://smee.io/abc' }, env);
      execFileSync('sh', ['-c', 'echo FROGNANO_BACKEND=openai >> .env'], { cwd: dir });
      const text = readFileSync(file, 'utf8');
      expect(text.split('\n')[0]).toBe('# from deploy/env.example');
      expect(parseEnv(text)).toEqual({
        APP_ID: '4711',
        REDIS_URL: 'redis://127.0.0.1:6379',
        PRIVATE_KEY: pem,
        WEBHOOK_PROXY_URL: 'https://smee.io/abc',
        FROGNANO_BACKEND: 'openai',
      });
      expect(env).toMatchObject({ APP_ID: '4711', WEBHOOK_PROXY_URL: 'https://smee.io/abc' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
