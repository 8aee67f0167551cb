import { describe, expect, it } from 'vitest'
import { createEngine } from '../../src/index.js'

describe('the debugger option', () => {
  it('is refused at createEngine without a ui provider, with a message that says what to pass', () => {
    for (const bad of [
      { basePath: '/_skein' },
      { basePath: '/_skein', ui: null },
      { basePath: '/_skein', ui: {} },
      { basePath: '/_skein', ui: { fetch: 'nope' } },
    ]) {
      expect(() => createEngine({ debugger: bad as never })).toThrow(
        /debugger\.ui must be a UI provider with a fetch\(request, \{ basePath \}\) method.*skein\/debugger/,
      )
    }
    expect(() => createEngine({ debugger: 'yes' as never })).toThrow(/debugger must be an object/)
  })
})
