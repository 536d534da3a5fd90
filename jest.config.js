// Tests are native ESM TypeScript compiled by swc; every test file gets its own database cloned
// from a migrated template (see test/support/globalSetup.ts).
const swc = [
  '@swc/jest',
  {
    jsc: { parser: { syntax: 'typescript' }, target: 'es2024' },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  },
];

export default {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};
