// The debugger's Queues page in real Chromium: flow control's keys with their active and
// queued runs, read again while the page is open (a run admitted shows without a reload).
import { join } from 'node:path'
import { createEngine, type Engine } from 'skein'
import { debuggerUi } from 'skein/debugger'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ARTIFACTS, hasChromium, launchBrowser } from './chromium.js'

const WAIT = { timeout: 30_000 }

const tenantSync = defineWorkflow({
  name: 'tenant-sync',
  flow: { concurrency: { limit: 1, key: (input: { tenant: string }) => input.tenant } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})

describe.skipIf(!hasChromium)('the debugger queues page', () => {
  let engine: Engine
  let url: string
  let browser: Awaited<ReturnType<typeof launchBrowser>>
  beforeAll(async () => {
    engine = createEngine({
      modules: [workflow({ definitions: [tenantSync] })],
      authorize: () => true,
      debugger: { basePath: '/_skein', ui: debuggerUi() },
    })
    const server = await engine.serve({ port: 0 })
    url = `${server.url}/_skein/`
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await engine?.stop()
  })

  it('lists each key with its active and queued runs, live', { timeout: 90_000 }, async () => {
    for (const runId of ['a1', 'a2', 'a3'])
      await engine.start(tenantSync, { tenant: 'acme' }, { runId })
    const page = await browser.context.newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    await page.goto(`${url}#/queues`)
    const row = page.locator('table[aria-label="queues"] tbody tr', { hasText: 'acme' })
    await row.waitFor(WAIT)
    const cells = async () => (await row.locator('td').allTextContents()).map((t) => t.trim())
    expect(await cells()).toEqual([
      'workflow:tenant-sync',
      'acme',
      '1',
      '1',
      '2',
      expect.any(String),
    ])
    // a1 ends: a2 takes its slot; the page shows it without a reload.
    await engine.signal('a1', [{ type: 'app.go' }])
    await page
      .locator('table[aria-label="queues"] tbody tr td:nth-child(5)', { hasText: /^1$/ })
      .waitFor(WAIT)
    expect(await cells()).toEqual([
      'workflow:tenant-sync',
      'acme',
      '1',
      '1',
      '1',
      expect.any(String),
    ])
    await page.screenshot({ path: join(ARTIFACTS, 'queues.png'), fullPage: true })
    expect(problems).toEqual([])
  })
})
