// Debian's Chromium driven by playwright-core (no browser download). When it is missing the
// browser tests skip and say so loudly; `.ci/run` installs it, so in CI they always run.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
export const hasChromium = existsSync(CHROMIUM)
if (!hasChromium) {
  console.warn(
    `\n*** SKIPPING the debugger's browser tests: ${CHROMIUM} is missing (apt-get install -y chromium; .ci/run does it) ***\n`,
  )
}

/** Screenshots land here (gitignored): `test-artifacts/debugger/<name>.png`. */
export const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts', 'debugger')

/** A fresh profile per launch; `close()` removes it. */
export async function launchBrowser(): Promise<{
  context: BrowserContext
  close(): Promise<void>
}> {
  mkdirSync(ARTIFACTS, { recursive: true })
  const profile = mkdtempSync(join(tmpdir(), 'skein-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  })
  return {
    context,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
