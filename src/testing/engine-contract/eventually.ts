/** Polls often and long enough for a slow store on a busy machine: a wait, never a timing. */
const EVENTUALLY_LIMIT_MS = 20_000

/** Resolves once `check` holds; rejects naming `what` if it never does. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
): Promise<void> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > EVENTUALLY_LIMIT_MS) {
      throw new Error(`engine contract: gave up waiting for ${what}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}
