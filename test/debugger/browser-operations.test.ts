// The run page's Cancel and "Re-run from here" in real Chromium: Cancel shows only on a host
// that serves the opt-in cancel route, asks to confirm, and cancels; "Re-run from here" forks
// the run at the chosen node and opens the new run, the source untouched.
import { join } from 'node:path'
import { createEngine, type Engine } from 'skein'
import { debuggerUi } from 'skein/debugger'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { perTry } from '../support/per-try.js'
import { ARTIFACTS, hasChromium, launchBrowser } from './chromium.js'

const WAIT = { timeout: 30_000 }

let broken = true
const checkout = defineWorkflow({
  name: 'checkout',
  nodes: {
    cart: { run: () => ({ items: 2 }) },
    pay: {
      after: ['cart'],
      run: () => {
        if (broken) throw new Error('the payment code has a bug')
        return 'paid'
      },
    },
  },
})
const waiting = defineWorkflow({
  name: 'waiting',
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})

describe.skipIf(!hasChromium)('the run page operations', () => {
  const engines: Engine[] = []
  const urls: Record<'on' | 'off', string> = { on: '', off: '' }
  let browser: Awaited<ReturnType<typeof launchBrowser>>
  beforeAll(async () => {
    for (const mode of ['on', 'off'] as const) {
      const engine = createEngine({
        modules: [workflow({ definitions: [checkout, waiting] })],
        authorize: () => true,
        http: { cancelRoutes: mode === 'on' },
        debugger: { basePath: '/_skein', ui: debuggerUi() },
      })
      engines.push(engine)
      urls[mode] = `${(await engine.serve({ port: 0 })).url}/_skein/`
    }
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    for (const engine of engines) await engine.stop()
  })

  it('offers Cancel only where the host serves it, and cancels after a confirmation', {
    timeout: 90_000,
  }, async () => {
    const [on, off] = engines
    const [wOn, wOff] = [perTry('w-on'), perTry('w-off')]
    await on.start(waiting, undefined, { runId: wOn })
    await off.start(waiting, undefined, { runId: wOff })
    const page = await browser.context.newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))

    const asked = page.waitForResponse((r) => r.url().endsWith('/capabilities.json'), WAIT)
    await page.goto(`${urls.off}#/runs/${wOff}`)
    expect(await (await asked).json()).toEqual({ cancel: false, operations: true })
    await page.getByRole('button', { name: 'Re-run from here' }).waitFor(WAIT)
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(resolve)))
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0)

    await page.goto(`${urls.on}#/runs/${wOn}`)
    await page.getByRole('button', { name: 'Cancel run' }).click(WAIT)
    expect((await on.getRun(wOn)).status).toBe('running')
    await page.getByRole('button', { name: 'Keep running' }).click(WAIT)
    await page.getByRole('button', { name: 'Cancel run' }).click(WAIT)
    await page.getByRole('button', { name: 'Confirm cancel' }).click(WAIT)
    await page.getByRole('status').filter({ hasText: 'Cancel: done' }).waitFor(WAIT)
    await page.locator('[data-testid="run-status"]', { hasText: 'cancelled' }).waitFor(WAIT)
    expect((await on.getRun(wOn)).status).toBe('cancelled')
    expect(problems).toEqual([])
  })

  it('"Re-run from here" forks the run at a node and opens the fork', {
    timeout: 90_000,
  }, async () => {
    const engine = engines[0]
    broken = true
    const c1 = perTry('c')
    await engine.start(checkout, undefined, { runId: c1 })
    expect((await engine.getRun(c1)).status).toBe('failed')
    const before = JSON.stringify(await engine.getEvents(c1))
    broken = false
    const page = await browser.context.newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    await page.goto(`${urls.on}#/runs/${c1}`)
    await page.locator('#fork-node').selectOption('pay', WAIT)
    await page.getByRole('button', { name: 'Re-run from here' }).click(WAIT)
    await page.waitForURL(new RegExp(`#/runs/(?!${c1})`), WAIT)
    const forkId = decodeURIComponent(new URL(page.url()).hash.replace('#/runs/', ''))
    await page.locator('[data-testid="run-status"]', { hasText: 'completed' }).waitFor(WAIT)
    const link = page.locator('[data-testid="forked-from"]')
    await link.waitFor(WAIT)
    expect(await link.textContent()).toMatch(new RegExp(`Forked from\\s+${c1} at seq \\d+`))
    expect(await engine.getRun(forkId)).toMatchObject({
      status: 'completed',
      output: { cart: { items: 2 }, pay: 'paid' },
    })
    expect(JSON.stringify(await engine.getEvents(c1))).toBe(before)
    await page.screenshot({ path: join(ARTIFACTS, 'run-fork.png'), fullPage: true })
    expect(problems).toEqual([])
  })
})
