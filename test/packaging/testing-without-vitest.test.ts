import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)

// A resolve hook that makes `vitest` unresolvable, as in an app that never installed it.
const hideVitest = `data:text/javascript,${encodeURIComponent(`
  export async function resolve(specifier, context, next) {
    if (specifier === 'vitest' || specifier.startsWith('vitest/')) {
      const error = new Error('Cannot find package vitest (hidden by the test)')
      error.code = 'ERR_MODULE_NOT_FOUND'
      throw error
    }
    return next(specifier, context)
  }`)}`
const register = `data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module'; register(${JSON.stringify(hideVitest)})`,
)}`

const program = `
  const testing = await import('skein/testing')
  const { memoryStore } = await import('skein')
  const clock = testing.manualClock(1000)
  await clock.advance(500)
  const store = testing.faultyStore(memoryStore())
  await store.append('r', testing.makeEnvelopes('r', 1, 2), { expectedSeq: 0 })
  const contracts = await import('skein/testing/vitest').then(() => 'loaded', (e) => e.code)
  console.log(JSON.stringify({ now: clock.now(), tail: await store.tail('r'), contracts }))
`

describe('skein/testing without vitest', () => {
  it('gives the fake clock and the faulty store to an app that has no vitest', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        '--conditions=skein-source',
        '--import',
        'tsx',
        '--import',
        register,
        '--input-type=module',
        '-e',
        program,
      ],
      { timeout: 60_000 },
    )
    // The contract suites do need vitest: the hook really hides it.
    expect(JSON.parse(stdout)).toEqual({ now: 1500, tail: 2, contracts: 'ERR_MODULE_NOT_FOUND' })
  })
})
