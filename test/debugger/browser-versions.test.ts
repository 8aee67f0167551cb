// The debugger's Versions page and run page in real Chromium, on a host that does not register
// a run's version after the only host that did stopped: the drift report shows v1 stranded, the
// runs list and the run page say the run is stranded and why (docs/deploys.md).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, type Engine } from 'skein'
import { debuggerUi } from 'skein/debugger'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ARTIFACTS, hasChromium, launchBrowser } from './chromium.js'

const WAIT = { timeout: 30_000 }

const order = (version: string) =>
  defineWorkflow({
    name: 'order',
    version,
    nodes: {
      paid: { run: (ctx) => ctx.waitFor('shop.paid') },
      ...(version === 'v2' && { audit: { after: ['paid'], run: () => 'audited' } }),
    },
  })

describe.skipIf(!hasChromium)('the debugger on a host without a run’s version', () => {
  const dir = mkdtempSync(join(tmpdir(), 'skein-browser-versions-'))
  const path = join(dir, 'runs.db')
  let engine: Engine
  let url: string
  let browser: Awaited<ReturnType<typeof launchBrowser>>
  beforeAll(async () => {
    const ownership = { pollMs: 20, leaseMs: 300 }
    const oldHost = createEngine({
      store: sqliteStore({ path }),
      modules: [workflow({ definitions: [order('v1')] })],
      ownership: { ...ownership, owner: 'old' },
    })
    await oldHost.startRun({ kind: 'workflow', definitionName: 'order', runId: 'old-order' })
    await oldHost.stop()
    engine = createEngine({
      store: sqliteStore({ path }),
      modules: [workflow({ definitions: [order('v2')] })],
      ownership: { ...ownership, owner: 'new' },
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
    rmSync(dir, { recursive: true, force: true })
  })

  it('shows v1 stranded in the versions table, the runs list and the run page', {
    timeout: 90_000,
  }, async () => {
    const page = await browser.context.newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    await page.goto(`${url}#/versions`)
    const row = page.locator('table[aria-label="versions"] tbody tr', { hasText: 'v1' })
    await row.locator('td', { hasText: /^stranded$/ }).waitFor(WAIT)
    const cells = (await row.locator('td').allTextContents()).map((t) => t.trim())
    expect(cells).toEqual(['workflow:order', 'v1', '1', 'missing', 'stranded', '—', 'no'])
    await page.getByTestId('stranded-total').waitFor(WAIT)
    await page.screenshot({ path: join(ARTIFACTS, 'versions.png'), fullPage: true })

    await page.goto(`${url}#/`)
    await page
      .locator('tr[data-run-id="old-order"] .fleet-stranded', { hasText: 'stranded' })
      .waitFor(WAIT)
    await page.goto(`${url}#/runs/old-order`)
    const stranded = page.getByTestId('run-stranded')
    await stranded.waitFor(WAIT)
    expect(await stranded.textContent()).toMatch(/no live host registers workflow:order@v1/)
    expect(problems).toEqual([])
  })
})
