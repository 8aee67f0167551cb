// The debugger under load and bad data, in real Chromium: a 100,000-event run opens and scrolls
// reading only the pages in view; huge payloads, unknown event types and a failing store show
// content or an error state, never a blank page.
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { perTry } from '../support/per-try.js'
import { ARTIFACTS, hasChromium, launchBrowser } from './chromium.js'
import { type Host, startHost } from './host.js'

const WAIT = { timeout: 30_000 }
const BIG_RUN_EVENTS = 100_000

let host: Host
let browser: Awaited<ReturnType<typeof launchBrowser>>

async function openPage(path: string) {
  const page = await browser.context.newPage()
  const eventReads: string[] = []
  const problems: string[] = []
  page.on('request', (r) => {
    const url = new URL(r.url())
    // The event list's page reads; the timeline reads only its own types (`types=`), once, and
    // the run page reads its start event alone (`limit=1`) for a fork's source.
    const listRead =
      url.searchParams.get('live') !== 'true' &&
      !url.searchParams.has('types') &&
      url.searchParams.get('limit') !== '1'
    if (/\/events$/.test(url.pathname) && listRead) {
      eventReads.push(url.search)
    }
  })
  page.on('pageerror', (e) => problems.push(e.message))
  await page.goto(host.url + path)
  return { page, eventReads, problems }
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true })

describe.skipIf(!hasChromium)('the debugger with large and bad data', () => {
  beforeAll(async () => {
    host = await startHost()
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await host?.stop()
  })

  it('opens and scrolls a 100,000-event run reading only the pages in view', {
    timeout: 180_000,
  }, async () => {
    const { runId } = await host.engine.startRun({
      kind: 'workflow',
      definitionName: 'parked',
      runId: perTry('big'),
    })
    for (let sent = 0; sent < BIG_RUN_EVENTS; sent += 1000) {
      const events = Array.from({ length: 1000 }, (_, i) => ({
        type: 'bulk.tick',
        payload: { n: sent + i },
      }))
      await host.engine.signal(runId, events)
    }
    const tail = (await host.engine.getRun(runId)).lastSeq
    expect(tail).toBeGreaterThan(BIG_RUN_EVENTS)

    const { page, eventReads, problems } = await openPage(`#/runs/${runId}`)
    // It opens following the end of the log: the last event is on screen.
    await page.locator(`.event-row[data-seq="${tail}"] .type`).waitFor(WAIT)
    expect(await page.locator('.event-row').count()).toBeLessThan(100)
    const opened = eventReads.length
    expect(opened, eventReads.join(' ')).toBeLessThanOrEqual(3)

    // Jump to the middle of the log, then scroll a little further.
    const list = page.getByRole('listbox', { name: 'Events of the run' })
    await list.evaluate((el) => {
      el.scrollTop = el.scrollHeight / 2
    })
    const middle = page.locator('.event-row .type', { hasText: 'bulk.tick' }).first()
    await middle.waitFor(WAIT)
    await list.evaluate((el) => {
      el.scrollTop += 2000
    })
    await page.waitForFunction(
      () => document.querySelectorAll('.event-row .loading').length === 0,
      undefined,
      WAIT,
    )
    const seqs = await page
      .locator('.event-row')
      .evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-seq'))))
    expect(Math.min(...seqs)).toBeGreaterThan(45_000)
    expect(Math.max(...seqs)).toBeLessThan(55_000)
    // Each read is one page of at most 200 events: a few pages, never the whole log.
    expect(eventReads.every((q) => /limit=200/.test(q))).toBe(true)
    expect(eventReads.length).toBeLessThanOrEqual(opened + 4)
    expect(eventReads.length * 200).toBeLessThan(BIG_RUN_EVENTS / 50)
    await shot(page, 'big-run')
    console.log(
      `SCORE debugger-100k-events: ${eventReads.length} event page reads (${eventReads.length * 200} of ${tail} events) to open and scroll`,
    )
    expect(problems).toEqual([])
    await page.close()
  })

  it('renders huge payloads and unknown event types', { timeout: 90_000 }, async () => {
    const { runId } = await host.engine.startRun({
      kind: 'workflow',
      definitionName: 'parked',
      runId: perTry('odd'),
    })
    const huge = 'x'.repeat(900_000)
    await host.engine.signal(runId, [
      { type: 'mystery.thing', payload: { nested: { deep: [1, 2, { huge }] } } },
      { type: 'zz.unknown', payload: null },
    ])
    const { page, problems } = await openPage(`#/runs/${runId}`)
    const row = page.locator('.event-row', {
      has: page.locator('.type', { hasText: /^mystery\.thing$/ }),
    })
    await row.waitFor(WAIT)
    expect((await row.textContent())!.length).toBeLessThan(400)
    await page.locator('.event-row .type', { hasText: /^zz\.unknown$/ }).waitFor(WAIT)
    await row.click()
    const event = page.locator('.inspector details pre')
    await event.waitFor(WAIT)
    expect(await event.textContent()).toMatch(/more characters\)$/)
    expect((await event.textContent())!.length).toBeLessThan(25_000)
    await shot(page, 'huge-payload')
    expect(problems).toEqual([])
    await page.close()
  })

  it('shows an error state when the store fails, on the run page and the runs page', {
    timeout: 90_000,
  }, async () => {
    const broken = perTry('broken')
    await host.engine.startRun({ kind: 'workflow', definitionName: 'parked', runId: broken })
    host.store.failWhen((call) =>
      call.method !== 'append' && call.args[0] === broken ? 'before' : null,
    )
    const { page, problems } = await openPage(`#/runs/${broken}`)
    const state = page.locator('.error-state[role="alert"]')
    await state.waitFor(WAIT)
    expect(await state.textContent()).toMatch(
      /Could not load this run: INTERNAL: internal error.*\(HTTP 500\)/,
    )
    await shot(page, 'store-error-run')

    host.store.failWhen((call) => (call.method === 'listSummaries' ? 'before' : null))
    await page.goto(host.url)
    await page.getByRole('alert').filter({ hasText: 'Could not list runs: INTERNAL' }).waitFor(WAIT)
    await shot(page, 'store-error-runs')
    host.store.heal()
    // Healed: the next refresh lists runs again, no reload needed.
    await page.locator(`tr[data-run-id="${broken}"]`).waitFor(WAIT)
    expect(problems).toEqual([])
    await page.close()
  })
})
