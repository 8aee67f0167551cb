// The debugger in real Chromium against a real host on a loopback port: a run parked on a gate,
// approved from the page and completing live; time travel; an operator retry refused without a
// token and accepted with one; keyboard reachability and labels. No reloads anywhere.
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { perTry } from '../support/per-try.js'
import { ARTIFACTS, hasChromium, launchBrowser } from './chromium.js'
import { fanned, type Host, OPS_TOKEN, startHost, undone } from './host.js'

const WAIT = { timeout: 20_000 }

let host: Host
let browser: Awaited<ReturnType<typeof launchBrowser>>
let context: BrowserContext

/** A page that records every request and fails the test on a CSP violation or a page error. */
async function openPage(path = '') {
  const page = await context.newPage()
  const requests: string[] = []
  const problems: string[] = []
  page.on('request', (r) => requests.push(r.url()))
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/.test(m.text())) problems.push(m.text())
  })
  await page.goto(host.url + path)
  return { page, requests, problems }
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true })

/** Presses Tab until the focused element's text is `text`; fails after `max` presses. */
async function tabTo(page: Page, text: string, max = 80) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab')
    const focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '')
    if (focused === text) return
  }
  throw new Error(`"${text}" was not reached with the keyboard in ${max} Tab presses`)
}

/** Controls without a label or an accessible name (an empty list passes). */
const unlabelled = (page: Page) =>
  page.evaluate(() =>
    [...document.querySelectorAll('button, input, select, a[href], [role="listbox"]')]
      .filter((el) => {
        const named =
          (el as HTMLInputElement).labels?.length ||
          el.getAttribute('aria-label') ||
          el.getAttribute('aria-labelledby') ||
          el.textContent?.trim()
        return !named
      })
      .map((el) => el.outerHTML.slice(0, 120)),
  )

describe.skipIf(!hasChromium)('the debugger in Chromium', () => {
  beforeAll(async () => {
    host = await startHost()
    browser = await launchBrowser()
    context = browser.context
  })
  afterAll(async () => {
    await browser?.close()
    await host?.stop()
  })

  it('shows a parked run, approves it from the page and watches it complete live', {
    timeout: 90_000,
  }, async () => {
    const reviewId = perTry('review')
    await host.engine.startRun({
      kind: 'workflow',
      definitionName: 'review',
      input: { topic: 'debuggers' },
      runId: reviewId,
    })
    const { page, requests, problems } = await openPage()
    const row = page.locator(`tr[data-run-id="${reviewId}"]`)
    await row
      .locator('.waiting', { hasText: 'waiting for approval: Publish this post?' })
      .waitFor(WAIT)
    expect(await unlabelled(page)).toEqual([])
    await shot(page, 'runs-page')

    // Open the run with the keyboard.
    await tabTo(page, reviewId)
    await page.keyboard.press('Enter')
    const gate = page.locator('.dag g[data-node="approve"]')
    await gate.waitFor(WAIT)
    expect(await gate.getAttribute('data-status')).toBe('waiting')
    expect(await page.locator('.dag g[data-node="draft"]').getAttribute('data-status')).toBe('done')
    expect(await page.locator('.dag g[data-node="publish"]').getAttribute('data-status')).toBe(
      'pending',
    )
    await page.getByText('connected', { exact: true }).waitFor(WAIT)
    expect(await unlabelled(page)).toEqual([])
    await shot(page, 'run-parked')

    // A marker on window survives only if the page is never reloaded.
    await page.evaluate(() => ((window as any).__noReload = true))
    await tabTo(page, 'Approve')
    await page.keyboard.press('Enter')
    await page.locator('[data-testid="run-status"]', { hasText: 'completed' }).waitFor(WAIT)
    await page.locator('.dag g[data-node="publish"][data-status="done"]').waitFor(WAIT)
    expect(await page.evaluate(() => (window as any).__noReload)).toBe(true)
    expect((await host.engine.getRun(reviewId)).status).toBe('completed')
    await shot(page, 'run-approved')

    // Time travel: the decision event, and the state just before it.
    const decided = page
      .locator('.event-row')
      .filter({ has: page.locator('.type', { hasText: /^approval\.decided$/ }) })
    await decided.waitFor(WAIT)
    await decided.click()
    const before = page.locator('.state-before pre')
    await before.waitFor(WAIT)
    expect(await before.textContent()).toMatch(/"status": "running"/)
    expect(await before.textContent()).toMatch(/"status": "waiting"/)
    expect(await page.locator('.inspector .event-type').textContent()).toContain('approval.decided')
    await shot(page, 'time-travel')

    // Everything came from this host: no CDN, no other origin.
    const origin = new URL(host.url).origin
    expect(requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([])
    expect(problems).toEqual([])
    await page.close()
  })

  it('draws a fan-out as one node that counts its items', { timeout: 60_000 }, async () => {
    const { runId } = await host.engine.start(fanned, undefined, { wait: 'settled' })
    const { page, problems } = await openPage(`#/runs/${runId}`)
    const node = page.locator('.dag g[data-node="pack"][data-status="done"]')
    await node.waitFor(WAIT)
    expect(await page.locator('.dag g[data-node]').count()).toBe(1)
    expect(await node.getAttribute('data-items')).toBe('5/5')
    expect(await node.locator('.node-state').textContent()).toBe('done · map 5/5 · 1 failed')
    expect(problems).toEqual([])
    await page.close()
  })

  it('draws a compensated node, and the failed node that started the compensation', {
    timeout: 60_000,
  }, async () => {
    const { runId, state } = await host.engine.start(undone, undefined, { wait: 'settled' })
    expect(state.status).toBe('failed')
    const { page, problems } = await openPage(`#/runs/${runId}`)
    const pack = page.locator('.dag g[data-node="pack"][data-status="compensated"]')
    await pack.waitFor(WAIT)
    expect(await pack.locator('.node-state').textContent()).toBe('compensated')
    expect(await page.locator('.dag g[data-node="ship"]').getAttribute('data-status')).toBe(
      'failed',
    )
    await page.locator('.event-row .type', { hasText: 'workflow.node.compensated' }).waitFor(WAIT)
    expect(problems).toEqual([])
    await page.close()
  })

  it('refuses an effect retry without an operations token and accepts it with one', {
    timeout: 90_000,
  }, async () => {
    const { runId } = await host.engine.startRun({
      kind: 'workflow',
      definitionName: 'doomed',
      runId: perTry('doomed'),
    })
    expect((await host.engine.getRun(runId)).status).toBe('failed')
    const { page, problems } = await openPage(`#/runs/${runId}`)
    const retry = page.getByRole('button', { name: 'Retry' })
    await retry.waitFor(WAIT).catch(async (error) => {
      await shot(page, 'retry-missing')
      throw error
    })
    await retry.click({ timeout: 5000 }).catch(async (error) => {
      await shot(page, 'retry-click')
      console.log(await page.locator('.effects').evaluate((e) => e.outerHTML))
      throw error
    })
    await page.getByRole('alert').filter({ hasText: 'Retry refused: UNAUTHORIZED' }).waitFor(WAIT)
    expect(await page.getByRole('alert').filter({ hasText: 'HTTP 401' }).count()).toBe(1)
    await shot(page, 'retry-refused')
    expect((await host.engine.getRun(runId)).status).toBe('failed')

    await page.getByLabel('API token').fill(OPS_TOKEN)
    await page.getByLabel('API token').press('Enter')
    await tabTo(page, 'Retry')
    await page.keyboard.press('Enter')
    await page.locator('[data-testid="run-status"]', { hasText: 'completed' }).waitFor(WAIT)
    expect((await host.engine.getRun(runId)).status).toBe('completed')
    await shot(page, 'retry-accepted')
    expect(problems).toEqual([])
    await page.close()
  })
})
