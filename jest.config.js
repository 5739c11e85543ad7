// ESM project: jest runs under --experimental-vm-modules (see the npm test script) with ts-jest's ESM preset.
/** @type {import('jest').Config} */
export default {
  preset: 'ts-jest/presets/default-esm',
  // Shares the main realm's typed-array constructors so onnxruntime-node's native tensors pass its instanceof checks.
  testEnvironment: '<rootDir>/test/support/node-environment.cjs',
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  setupFilesAfterEnv: ['<rootDir>/test/support/restore-nock.ts'],
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  testTimeout: 60000,
};
