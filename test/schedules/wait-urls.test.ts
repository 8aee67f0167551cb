import { createHmac } from 'node:crypto'
import { defineEffect, defineInput, defineModule, type WaitUrl } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'

const engineFor = enginesStoppedAfterEach()

/** What the "mailer" was handed, by run: the URLs a real effect would e-mail. */
function harness(options: { signature?: { secret?: string } } = {}) {
  const sent = new Map<string, WaitUrl>()
  const mail = defineModule({
    namespace: 'mail',
    events: {
      answered: defineInput(z.object({ approved: z.boolean(), by: z.string() })),
    },
    effects: {
      send: defineEffect({
        execute: (input: { to: string; waitUrl: WaitUrl }, ctx) => {
          sent.set(ctx.runId, input.waitUrl)
          return { sentTo: input.to }
        },
      }),
    },
  })
  const approval = defineWorkflow({
    name: 'expense',
    nodes: {
      ask: {
        run: (ctx) =>
          ctx.waitForUrl({
            send: 'mail.send',
            input: { to: 'boss@example.com' },
            event: 'mail.answered',
            expiresInMs: 60_000,
            ...(options.signature ? { signature: options.signature } : {}),
          }),
      },
      done: { after: ['ask'], run: ({ results }) => ({ approved: results.ask.approved }) },
    },
  })
  return { sent, modules: [mail, workflow({ definitions: [approval] })], approval }
}

const post = (
  engine: { fetch(r: Request): Promise<Response | null> },
  url: string,
  body: unknown,
  headers = {},
) =>
  engine
    .fetch(
      new Request(`http://skein.test${url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      }),
    )
    .then(async (res) => ({ status: res!.status, body: await res!.json() }))

describe('wait URLs', () => {
  it('the URL is sent before the run parks; a POST completes the wait once; the log has the token id, never the token', async () => {
    const lines: string[] = []
    const logger = {
      debug: (f: object, m?: string) => lines.push(JSON.stringify(f) + (m ?? '')),
      info: (f: object, m?: string) => lines.push(JSON.stringify(f) + (m ?? '')),
      warn: (f: object, m?: string) => lines.push(JSON.stringify(f) + (m ?? '')),
      error: (f: object, m?: string) => lines.push(JSON.stringify(f) + (m ?? '')),
    }
    const observed: string[] = []
    const { sent, modules, approval } = harness()
    const engine = engineFor({ modules, logger, observer: (o) => observed.push(JSON.stringify(o)) })
    const { runId } = await engine.start(approval, undefined, { wait: 'settled' })
    const url = sent.get(runId)!
    expect(url.url).toMatch(/^\/wait-urls\/wu_[A-Za-z0-9_-]{43}$/)
    expect(url.tokenId).toMatch(/^wt_/)
    const live: string[] = []
    const unsubscribe = await engine.subscribe(runId, (events) => live.push(JSON.stringify(events)))

    const done = await post(engine, url.url, { approved: true, by: 'boss' })
    expect(done).toEqual({ status: 200, body: { runId, completed: true, tokenId: url.tokenId } })
    const run = await engine.getRun(runId)
    expect(run.status).toBe('completed')
    expect(run.output).toMatchObject({ done: { approved: true } })

    const again = await post(engine, url.url, { approved: false, by: 'mallory' })
    expect(again.status).toBe(410)
    expect(again.body.error.code).toBe('WAIT_URL_GONE')
    unsubscribe()

    const log = JSON.stringify(await engine.getEvents(runId))
    expect(log).toContain(url.tokenId)
    expect(log).toContain('runtime.wait.url.completed')
    for (const text of [log, live.join(''), lines.join(''), observed.join('')]) {
      expect(text).not.toContain(url.token)
    }
  })

  it('refuses forged, expired, unsigned and wrongly-shaped requests, writing nothing', async () => {
    const clock = manualClock()
    const secret = 'provider-signing-secret-0123'
    const { sent, modules, approval } = harness({ signature: { secret } })
    const engine = engineFor({ modules, clock })
    const { runId } = await engine.start(approval, undefined, { wait: 'settled' })
    const url = sent.get(runId)!
    const before = (await engine.getEvents(runId)).length
    const forged = await post(engine, `/wait-urls/wu_${'A'.repeat(43)}`, {
      approved: true,
      by: 'x',
    })
    expect([forged.status, forged.body.error.code]).toEqual([404, 'WAIT_URL_NOT_FOUND'])
    const garbage = await post(engine, '/wait-urls/nope', {})
    expect(garbage.status).toBe(404)
    const body = { approved: true, by: 'boss' }
    const unsigned = await post(engine, url.url, body)
    expect([unsigned.status, unsigned.body.error.code]).toEqual([401, 'SIGNATURE_INVALID'])
    const sign = (value: unknown) =>
      createHmac('sha256', secret).update(JSON.stringify(value)).digest('hex')
    const wrongShape = await post(
      engine,
      url.url,
      { approved: 'yes' },
      { 'x-signature': sign({ approved: 'yes' }) },
    )
    expect([wrongShape.status, wrongShape.body.error.code]).toEqual([400, 'INVALID_EVENT'])
    expect((await engine.getEvents(runId)).length).toBe(before)
    await clock.advance(60_001)
    const expired = await post(engine, url.url, body, { 'x-signature': sign(body) })
    expect([expired.status, expired.body.error.code]).toEqual([410, 'WAIT_URL_GONE'])
    expect((await engine.getEvents(runId)).length).toBe(before)
  })

  it('1,000 URLs completed concurrently: each wait once, a token only ever completes its own run', async () => {
    const { sent, modules, approval } = harness()
    const engine = engineFor({ modules })
    const runs = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        engine.start(approval, undefined, { runId: `exp-${i}`, wait: 'settled' }),
      ),
    )
    const started = Date.now()
    const results = await Promise.all(
      runs.flatMap(({ runId }, i) => {
        const url = sent.get(runId)!.url
        // Each URL posted twice at once, one of them with a body the schema refuses.
        return [
          post(engine, url, { approved: i % 2 === 0, by: runId }),
          post(engine, url, { approved: 'maybe' }),
        ]
      }),
    )
    const ms = Date.now() - started
    const ok = results.filter((r) => r.status === 200)
    expect(ok).toHaveLength(1000)
    // The refused body: 400 when it came first, 410 once its wait was completed.
    const refused = results.filter((r) => r.status === 400 || r.status === 410)
    expect(refused).toHaveLength(1000)
    let wrong = 0
    for (const [i, { runId }] of runs.entries()) {
      const state = await engine.getRun(runId)
      if (state.status !== 'completed' || (state.output as any).done.approved !== (i % 2 === 0))
        wrong++
      const completions = (await engine.getEvents(runId)).filter(
        (e) => e.type === 'runtime.wait.url.completed',
      )
      if (completions.length !== 1) wrong++
    }
    expect(wrong).toBe(0)
    console.log(
      `SCORE wait-urls-concurrent urls=1000 completed=${ok.length} wrong=${wrong} refused=${refused.length} ms=${ms}`,
    )
    // A token used on its run cannot reach another run's wait: the other run still parks.
    const { runId: other } = await engine.start(approval, undefined, { wait: 'settled' })
    const replay = await post(engine, sent.get('exp-0')!.url, { approved: true, by: 'x' })
    expect(replay.status).toBe(410)
    expect((await engine.getRun(other)).status).toBe('running')
  })
})
