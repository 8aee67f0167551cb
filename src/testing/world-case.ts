import { afterEach, it } from 'vitest'

/** Registers one contract test: its body gets a fresh world, closed after it. */
export type WorldCase<W> = (title: string, body: (world: W) => Promise<void>) => void

/**
 * How a contract suite registers its tests: each opens its own world with `open` and the world
 * is closed after the test, passed or failed. Call it inside the suite's `describe`.
 */
export function worldCases<W>(
  open: () => Promise<{ world: W; close(): Promise<void> }>,
): WorldCase<W> {
  let current: { close(): Promise<void> } | undefined
  afterEach(async () => {
    const closing = current
    current = undefined
    await closing?.close()
  })
  return (title, body) =>
    it(title, async () => {
      const opened = await open()
      current = opened
      await body(opened.world)
    })
}
