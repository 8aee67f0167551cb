// The debugger on an engine whose payloads are encrypted at rest (docs/data-lifecycle.md,
// "Payloads encrypted at rest"), in real Chromium: it shows the decoded payloads while the
// SQLite file holds none of them, and a run written under a key the engine no longer has shows
// an error naming the key id.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { aesGcmCodec, createEngine, type Engine } from 'skein'
import { debuggerUi } from 'skein/debugger'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { perTry } from '../support/per-try.js'
import { ARTIFACTS, hasChromium, launchBrowser } from './chromium.js'

const WAIT = { timeout: 30_000 }
const MARKER = 'iban-DE89-3704-SECRET'

const parked = defineWorkflow({
  name: 'parked',
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.note') } },
})
const oldKey = randomBytes(32)
const newKey = randomBytes(32)

describe.skipIf(!hasChromium)('the debugger over encrypted payloads', () => {
  const dir = mkdtempSync(join(tmpdir(), 'skein-debugger-codec-'))
  const file = join(dir, 'runs.db')
  let engine: Engine
  let url: string
  let browser: Awaited<ReturnType<typeof launchBrowser>>

  const open = (keys: Record<string, Buffer>, current: string) => {
    const e = createEngine({
      store: sqliteStore({ path: file }),
      modules: [workflow({ definitions: [parked] })],
      codec: aesGcmCodec({ keys, current }),
      authorize: () => true,
      debugger: { basePath: '/_skein', ui: debuggerUi() },
    })
    return e
  }

  beforeAll(async () => {
    // A run written under the old key, by an engine that is then stopped.
    const before = open({ old: oldKey }, 'old')
    await before.start(parked, { iban: MARKER }, { runId: 'under-old-key', wait: 'settled' })
    await before.stop()
    // The engine the browser sees has only the new key.
    engine = open({ new: newKey }, 'new')
    const server = await engine.serve({ port: 0 })
    url = `${server.url}/_skein/`
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await engine?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('shows decoded payloads; the database file and its WAL hold none', {
    timeout: 90_000,
  }, async () => {
    const secret = perTry('secret-run')
    await engine.start(parked, { iban: MARKER }, { runId: secret, wait: 'settled' })
    await engine.signal(secret, [{ type: 'app.note', payload: { note: MARKER } }], {
      wait: 'settled',
    })
    const page = await browser.context.newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    await page.goto(`${url}#/runs/${secret}`)
    const row = page.locator('.event-row', {
      has: page.locator('.type', { hasText: /^app\.note$/ }),
    })
    await row.waitFor(WAIT)
    await row.click()
    const shown = page.locator('.inspector details pre')
    await shown.waitFor(WAIT)
    expect(await shown.textContent()).toContain(MARKER)
    await page.screenshot({ path: join(ARTIFACTS, 'codec-decoded.png'), fullPage: true })
    expect(problems).toEqual([])
    await page.close()

    const raw = [file, `${file}-wal`]
      .filter((f) => existsSync(f))
      .map((f) => readFileSync(f).toString('latin1'))
      .join('')
    expect(raw).toContain(secret)
    expect(raw.includes(MARKER)).toBe(false)
  })

  it('a run under a key the engine lacks shows an error naming the key id', {
    timeout: 90_000,
  }, async () => {
    const page = await browser.context.newPage()
    await page.goto(`${url}#/runs/under-old-key`)
    const state = page.locator('.error-state[role="alert"]')
    await state.waitFor(WAIT)
    expect(await state.textContent()).toMatch(/PAYLOAD_UNDECODABLE.*key id old/)
    await page.screenshot({ path: join(ARTIFACTS, 'codec-missing-key.png'), fullPage: true })
    await page.close()
  })
})
