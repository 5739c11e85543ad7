import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const systemTests: string[] = createRequire(import.meta.url)('./systemTests.cjs');
const ROOT = path.resolve(import.meta.dirname, '../..');

/** The system project's list is matched by exact path: a renamed or deleted file would silently move to nothing. */
describe('the system test list', () => {
  it('names test files that exist, once each', () => {
    expect(systemTests.filter((p) => !existsSync(path.join(ROOT, p)))).toEqual([]);
    expect(new Set(systemTests).size).toBe(systemTests.length);
    expect(systemTests.every((p) => p.startsWith('test/') && p.endsWith('.test.ts'))).toBe(true);
  });
});
