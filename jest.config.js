// ESM project: jest runs under --experimental-vm-modules (see the npm scripts) with ts-jest's ESM preset.
// Two projects: `unit` runs in parallel workers (`npm run test:unit`), `system` one file at a time
// (`npm run test:system`); test/support/systemTests.cjs lists the system files and why each is there.
import { createRequire } from 'node:module';

const systemTests = createRequire(import.meta.url)('./test/support/systemTests.cjs');
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const systemPatterns = systemTests.map((p) => `<rootDir>/${escape(p)}$`);

/** What both projects share. */
const common = {
  preset: 'ts-jest/presets/default-esm',
  // Shares the main realm's typed-array constructors so onnxruntime-node's native tensors pass its instanceof checks;
  // gives each jest worker its own Redis database.
  testEnvironment: '<rootDir>/test/support/node-environment.cjs',
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  setupFilesAfterEnv: ['<rootDir>/test/support/restore-nock.ts'],
  roots: ['<rootDir>/test'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
};

/** @type {import('jest').Config} */
export default {
  // Top level, not per project: jest-circus reads the timeout from the global config (a project's is ignored, and
  // every test would get jest's 5 s).
  testTimeout: 60000,
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...systemPatterns],
    },
    {
      ...common,
      displayName: 'system',
      testMatch: systemTests.map((p) => `<rootDir>/${p}`),
    },
  ],
};
