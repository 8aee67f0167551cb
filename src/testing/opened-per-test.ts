import { afterEach } from 'vitest'

/**
 * For a contract suite (call it inside its `describe`): `open()` makes what one test needs, and
 * everything opened is closed after each test, in the order it was opened.
 */
export function openedPerTest<T>(
  make: () => T | Promise<T>,
  close: (opened: T) => unknown,
): () => Promise<T> {
  const opened: T[] = []
  afterEach(async () => {
    for (const one of opened.splice(0)) await close(one)
  })
  return async () => {
    const one = await make()
    opened.push(one)
    return one
  }
}
