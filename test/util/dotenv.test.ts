import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDotEnv } from '../../src/util/dotenv.js';

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
