// The run timeline in real Chromium: a run that spent its time in effect retries (with backoff),
// a durable sleep and a child workflow is drawn as rows of bars on one time axis, each with its
// duration; the page shows the run's input and every node's result without a click.
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ARTIFACTS, hasChromium, launchBrowser } from './chromium.js'
import { type Host, startHost, traced } from './host.js'

const WAIT = { timeout: 30_000 }

let host: Host
let browser: Awaited<ReturnType<typeof launchBrowser>>

async function openPage(path: string) {
  const page = await browser.context.newPage()
  const problems: string[] = []
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/.test(m.text())) problems.push(m.text())
  })
  await page.goto(host.url + path)
  return { page, problems }
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true })

/** The bars of one timeline row: status and duration of each. */
const bars = (page: Page, rowId: string) =>
  page.locator(`.span-row[data-row-id="${rowId}"] .span-bar`).evaluateAll((els) =>
    els.map((el) => ({
      status: el.getAttribute('data-status'),
      ms: Number(el.getAttribute('data-duration-ms')),
    })),
  )

describe.skipIf(!hasChromium)('the run timeline in Chromium', () => {
  beforeAll(async () => {
    host = await startHost()
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await host?.stop()
  })

  it('draws nodes, effect attempts with their backoff, the sleep and the child, with durations', {
    timeout: 90_000,
  }, async () => {
    const { runId } = await host.engine.start(traced, { order: 'A-17' })
    await host.engine.result(runId, { timeoutMs: 30_000 })
    const { page, problems } = await openPage(`#/runs/${runId}`)
    const timeline = page.getByRole('region', { name: /Timeline/ })
    await timeline.locator('.span-row[data-row-kind="child"]').waitFor(WAIT)

    // One row each: the run, three nodes, the effect, the sleep, the child (and its node).
    const kinds = await timeline
      .locator('.span-row')
      .evaluateAll((els) => els.map((el) => el.getAttribute('data-row-kind')))
    expect(kinds[0]).toBe('run')
    expect(kinds.filter((k) => k === 'node')).toHaveLength(4)
    expect(kinds.filter((k) => k === 'effect')).toHaveLength(1)
    expect(kinds.filter((k) => k === 'wait')).toHaveLength(1)
    expect(kinds.filter((k) => k === 'child')).toHaveLength(1)

    // The effect: three attempts (two failed) with a backoff before each retry.
    const effectRow = timeline.locator('.span-row[data-row-kind="effect"]')
    expect(await effectRow.locator('.span-label').textContent()).toContain('3 attempts')
    const effectId = (await effectRow.getAttribute('data-row-id'))!
    const attempts = await bars(page, effectId)
    expect(attempts.map((a) => a.status)).toEqual([
      'failed',
      'backoff',
      'failed',
      'backoff',
      'completed',
    ])
    // The policy's backoff: 250 ms, then 500 ms (the bars are as long as the waits).
    expect(attempts[1].ms).toBeGreaterThanOrEqual(240)
    expect(attempts[3].ms).toBeGreaterThanOrEqual(490)

    // The sleep says when it fired, and lasted its 300 ms.
    const waitRow = timeline.locator('.span-row[data-row-kind="wait"]')
    expect(await waitRow.locator('.span-name').textContent()).toMatch(/^sleeping until \d{4}-/)
    const [sleep] = await bars(page, (await waitRow.getAttribute('data-row-id'))!)
    expect(sleep.status).toBe('done')
    expect(sleep.ms).toBeGreaterThanOrEqual(290)

    // Nodes in the order they ran, each as long as what it did; the run spans them all.
    const fetchNode = timeline.locator('.span-row[data-row-kind="node"]').first()
    expect(await fetchNode.locator('.span-name').textContent()).toBe('node fetch')
    const [run] = await bars(page, 'run')
    const fetchMs = (await bars(page, (await fetchNode.getAttribute('data-row-id'))!))[0].ms
    expect(fetchMs).toBeGreaterThanOrEqual(740)
    expect(run.status).toBe('completed')
    expect(run.ms).toBeGreaterThanOrEqual(fetchMs + 290)
    expect(await timeline.locator('h2').textContent()).toMatch(/Timeline \(\d/)

    // The input, plainly, and every node's result without a click.
    expect(await page.getByTestId('run-input').textContent()).toContain('"order": "A-17"')
    const results = page.getByRole('region', { name: 'Node results' })
    expect(await results.locator('tr[data-node-result="fetch"] .node-result').textContent()).toBe(
      '{"ok":true,"attempts":3}',
    )
    expect(await results.locator('tr[data-node-result="answer"] .node-result').textContent()).toBe(
      '{"echoed":{"from":"traced"}}',
    )
    // A finished run offers no Wake.
    expect(await page.getByRole('button', { name: 'Wake' }).count()).toBe(0)
    await shot(page, 'run-timeline')
    expect(problems).toEqual([])
    await page.close()
  })

  it('grows live while the run sleeps, and says what the run waits on', {
    timeout: 60_000,
  }, async () => {
    const { runId } = await host.engine.startRun({
      kind: 'workflow',
      definitionName: 'nap',
      input: { ms: 60_000 },
    })
    const { page, problems } = await openPage(`#/runs/${runId}`)
    const waiting = page.getByTestId('waiting-on')
    await waiting.waitFor(WAIT)
    expect(await waiting.textContent()).toMatch(/^sleeping until \d{4}-/)
    const waitRow = page.locator('.span-row[data-row-kind="wait"]')
    await waitRow.waitFor(WAIT)
    expect(await waitRow.getAttribute('data-status')).toBe('running')
    expect(await waitRow.locator('.span-took').textContent()).toContain('so far')
    expect(await page.getByRole('button', { name: 'Wake' }).count()).toBe(1)
    // The runs page says it too.
    await page.goto(`${host.url}#/`)
    await page
      .locator(`tr[data-run-id="${runId}"] .waiting`, { hasText: /^sleeping until / })
      .waitFor(WAIT)
    expect(problems).toEqual([])
    await page.close()
  })
})
