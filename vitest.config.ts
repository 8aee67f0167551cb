import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: { conditions: ['skein-source'] },
  ssr: { resolve: { conditions: ['skein-source'] } },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // A failed test runs once more; `npm test` names every test that passed only then
    // (decisions.md, "A failed test is retried once, and named").
    retry: 1,
  },
})
