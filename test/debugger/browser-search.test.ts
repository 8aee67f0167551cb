// The run list's search in real Chromium: runs found by attributes, status and definition
// (the filters of GET /runs/summaries), their attributes shown, a run opened by id; and on a
// host without operations routes, a finally failed effect listed as failed with no deadline
// and no Retry offered.
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ARTIFACTS, hasChromium, launchBrowser } from './chromium.js'
import { type Host, order, startHost } from './host.js'

const WAIT = { timeout: 30_000 }

let host: Host
let browser: Awaited<ReturnType<typeof launchBrowser>>

async function openPage(target: Host, path = '') {
  const page = await browser.context.newPage()
  const problems: string[] = []
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  await page.goto(target.url + path)
  return { page, problems }
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true })

const listed = (page: Page) =>
  page
    .locator('tr[data-run-id]')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run-id')))

describe.skipIf(!hasChromium)('the run list search in Chromium', () => {
  beforeAll(async () => {
    host = await startHost()
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await host?.stop()
  })

  it('finds runs by attributes, status and definition, and opens a run by id', {
    timeout: 90_000,
  }, async () => {
    const start = (runId: string, customer: string, amount: number) =>
      host.engine.start(order, undefined, { runId, attributes: { customer, amount } })
    await start('order-small', 'c1', 50)
    await start('order-big', 'c1', 150)
    await start('order-other', 'c2', 200)
    await host.engine.signal('order-other', [{ type: 'order.go', payload: {} }])
    const { page, problems } = await openPage(host)
    await page.locator('tr[data-run-id="order-big"]').waitFor(WAIT)
    const chips = await page.locator('tr[data-run-id="order-big"] .attr-chip').allTextContents()
    expect(chips.sort()).toEqual(['amount=150', 'customer=c1'])

    await page.getByLabel('Attributes').fill('customer=c1 amount>=100')
    await page.getByLabel('Attributes').press('Enter')
    await expect.poll(() => listed(page), WAIT).toEqual(['order-big'])

    await page.getByLabel('Attributes').fill('amount>=100')
    await page.getByLabel('Attributes').press('Enter')
    await expect.poll(() => listed(page), WAIT).toEqual(['order-other', 'order-big'])
    await page.getByLabel('completed').check()
    await expect.poll(() => listed(page), WAIT).toEqual(['order-other'])
    await page.getByLabel('completed').uncheck()
    await page.getByLabel('Definition').selectOption('order')
    await page.getByLabel('Order', { exact: true }).selectOption('oldest')
    await expect.poll(() => listed(page), WAIT).toEqual(['order-big', 'order-other'])
    await shot(page, 'runs-search')
    // The address carries the search: opened elsewhere, it finds the same runs.
    expect(decodeURIComponent(new URL(page.url()).hash)).toContain('attributes=amount>=100')
    const shared = await browser.context.newPage()
    await shared.goto(page.url())
    await expect.poll(() => listed(shared), WAIT).toEqual(['order-big', 'order-other'])
    expect(await shared.getByLabel('Attributes').inputValue()).toBe('amount>=100')
    await shared.close()

    // A filter the server refuses shows its error, not an empty list.
    await page.getByLabel('Attributes').fill('colour=red')
    await page.getByLabel('Attributes').press('Enter')
    await page.getByRole('alert').filter({ hasText: 'INVALID_REQUEST' }).waitFor(WAIT)

    await page.getByLabel('Open run by id').fill('order-small')
    await page.getByLabel('Open run by id').press('Enter')
    await page.locator('#run-title', { hasText: 'order-small' }).waitFor(WAIT)
    expect(await page.getByTestId('run-attributes').textContent()).toContain('amount')
    expect(problems).toEqual([])
    await page.close()
  })

  it('lists a finally failed effect without a deadline, and offers no Retry without operations routes', {
    timeout: 90_000,
  }, async () => {
    const closed = await startHost({ operations: false })
    try {
      const { runId } = await closed.engine.startRun({ kind: 'workflow', definitionName: 'doomed' })
      expect((await closed.engine.getRun(runId)).status).toBe('failed')
      const { page, problems } = await openPage(closed, `#/runs/${runId}`)
      const failed = page.locator('table[data-effects="failed"]')
      await failed.waitFor(WAIT)
      expect(await failed.locator('caption').textContent()).toContain('Failed effects')
      expect(await failed.locator('th').allTextContents()).not.toContain('Deadline')
      expect(await page.locator('table[data-effects="open"]').count()).toBe(0)
      expect(await page.getByRole('button', { name: 'Retry' }).count()).toBe(0)
      expect(await page.locator('.effects .note').textContent()).toContain('operations route')
      expect(await page.getByRole('button', { name: 'Wake' }).count()).toBe(0)
      expect(problems).toEqual([])
      await page.close()
    } finally {
      await closed.stop()
    }
  })
})
