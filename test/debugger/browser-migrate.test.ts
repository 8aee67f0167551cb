// The run page's migration in real Chromium (docs/deploys.md, "Migrating runs"): a target the
// run does not fit is refused with what differs and nothing written; a compatible one is checked
// first (a dry run, nothing written), then confirmed, and the run goes on under it.
import { join } from 'node:path'
import { createEngine, type Engine } from 'skein'
import { debuggerUi } from 'skein/debugger'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { perTry } from '../support/per-try.js'
import { ARTIFACTS, hasChromium, launchBrowser } from './chromium.js'

const WAIT = { timeout: 30_000 }

const paid = { run: (ctx: any) => ctx.waitFor('shop.paid') }
const v1 = defineWorkflow({ name: 'order', version: 'v1', nodes: { paid } })
// Compatible: `paid` as it was, a node added after it.
const v2 = defineWorkflow({
  name: 'order',
  version: 'v2',
  nodes: { paid, ship: { after: ['paid'], run: () => 'shipped' } },
})
// Incompatible: `paid` (started in the run) now runs after a new node.
const v3 = defineWorkflow({
  name: 'order',
  version: 'v3',
  nodes: { check: { run: () => 'ok' }, paid: { ...paid, after: ['check'] } },
})

describe.skipIf(!hasChromium)('the debugger migrate button', () => {
  let engine: Engine
  let url: string
  let browser: Awaited<ReturnType<typeof launchBrowser>>
  beforeAll(async () => {
    engine = createEngine({
      modules: [workflow({ definitions: [v1, v2, v3] })],
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

  it('refuses an unsafe target with the diff, then migrates after a dry-run confirm', {
    timeout: 90_000,
  }, async () => {
    const order1 = perTry('order')
    await engine.start(v1, {}, { runId: order1 })
    const tail = (await engine.getEvents(order1)).length
    const page = await browser.context.newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    await page.goto(`${url}#/runs/${order1}`)
    const target = page.getByLabel('Target version')
    await target.waitFor(WAIT)
    expect(await target.locator('option').allTextContents()).toEqual(['v2', 'v3'])

    await target.selectOption('v3')
    await page.getByRole('button', { name: 'Migrate…' }).click()
    const refused = page.getByRole('alert').filter({ hasText: 'Migration refused' })
    await refused.waitFor(WAIT)
    expect(await refused.textContent()).toMatch(/MIGRATION_REFUSED/)
    expect(await refused.getByRole('listitem').allTextContents()).toEqual([
      expect.stringMatching(/nodes\.paid\.after: run \[\], target \["check"\]/),
    ])
    expect(await engine.getEvents(order1)).toHaveLength(tail)

    await target.selectOption('v2')
    await page.getByRole('button', { name: 'Migrate…' }).click()
    const confirm = page.getByRole('button', { name: 'Confirm migration to v2' })
    await confirm.waitFor(WAIT)
    // The dry run wrote nothing.
    expect(await engine.getEvents(order1)).toHaveLength(tail)
    await page.screenshot({ path: join(ARTIFACTS, 'migrate-confirm.png'), fullPage: true })
    await confirm.click()
    await page.getByRole('status').filter({ hasText: 'Migrated to v2' }).waitFor(WAIT)
    await page.getByText('workflow:order@v2', { exact: true }).waitFor(WAIT)
    // The move is in the timeline, and the run goes on under v2.
    await page.getByText('runtime.run.migrated').first().waitFor(WAIT)
    await engine.signal(order1, [{ type: 'shop.paid', payload: {} }])
    expect(await engine.result(order1)).toMatchObject({ ship: 'shipped' })
    await page.screenshot({ path: join(ARTIFACTS, 'migrate-done.png'), fullPage: true })
    expect(problems).toEqual([])
  })
})
