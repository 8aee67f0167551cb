import { createEngine, defineEffect, defineModule } from 'skein'
import { createEngineClient } from 'skein/client'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import type { Engine } from '../../src/runtime/engine-types.js'
import { idsOf, makeHandler, manualTimers, sseReader } from './helpers.js'
import { realEngine, START_RELEASE } from './real-engine.js'

// A server-side event-type filter, `?types=approval.requested,workflow.node.*`, for
// live streams and for GET /runs/:id/events. Ids stay seqs, so resuming is exact.

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

const TYPES = 'approval.requested,workflow.node.*'
const matches = (type: string) => type === 'approval.requested' || type.startsWith('workflow.node.')

async function parkedRelease(runId: string) {
  const { engine } = realEngine()
  engines.push(engine)
  await engine.startRun({ ...START_RELEASE, runId })
  const { items } = await engine.project<{ items: Array<{ approvalId: string }> }>(
    runId,
    'pendingApprovals',
  )
  const decide = () =>
    engine.signal(runId, [
      {
        type: 'approval.decided',
        payload: { approvalId: items[0].approvalId, outcome: 'approve' },
      },
    ])
  return { engine, decide }
}

const frames = (text: string) =>
  text
    .split('\n\n')
    .filter((f) => f.startsWith('id: '))
    .map((f) => JSON.parse(f.split('\ndata: ')[1]) as { seq: number; type: string })

describe('event-type filter', () => {
  it('a live stream carries only matching events, ids still seqs, then the end frame', async () => {
    const { engine, decide } = await parkedRelease('t1')
    const reader = sseReader(
      (await engine.fetch(new Request(`http://x/runs/t1/events?live=true&types=${TYPES}`)))!,
    )
    await reader.until((t) => t.includes('"approval.requested"'))
    const done = await decide()
    const text = await reader.rest()
    const all = await engine.getEvents('t1')
    const wanted = all.filter((e) => matches(e.type))
    expect(frames(text).map((e) => [e.seq, e.type])).toEqual(wanted.map((e) => [e.seq, e.type]))
    expect(idsOf(text)).toEqual(wanted.map((e) => e.seq))
    expect(wanted.length).toBeLessThan(all.length)
    // The run's terminal event is filtered out, and the stream still ends, covering the log.
    expect(text).toContain(
      `event: end\ndata: {"runId":"t1","status":"completed","lastSeq":${done.lastSeq}}`,
    )
  })

  it('resumes after a filtered id exactly', async () => {
    const { engine, decide } = await parkedRelease('t2')
    await decide()
    const all = await engine.getEvents('t2')
    const wanted = all.filter((e) => matches(e.type)).map((e) => e.seq)
    const after = wanted[1]
    const text = await sseReader(
      (await engine.fetch(
        new Request(`http://x/runs/t2/events?types=${TYPES}`, {
          headers: { accept: 'text/event-stream', 'last-event-id': String(after) },
        }),
      ))!,
    ).rest()
    expect(idsOf(text)).toEqual(wanted.filter((seq) => seq > after))
  })

  it('filters GET /runs/:id/events too: limit counts matching events', async () => {
    const { engine, decide } = await parkedRelease('t3')
    await decide()
    const all = await engine.getEvents('t3')
    const nodes = all.filter((e) => e.type === 'workflow.node.finished')
    const res = (await engine.fetch(
      new Request('http://x/runs/t3/events?types=workflow.node.finished&limit=2'),
    ))!
    expect(res.status).toBe(200)
    const { events } = await res.json()
    expect(events.map((e: { seq: number }) => e.seq)).toEqual(nodes.slice(0, 2).map((e) => e.seq))
    const from = nodes[1].seq + 1
    const rest = await (await engine.fetch(
      new Request(`http://x/runs/t3/events?types=workflow.node.finished&fromSeq=${from}`),
    ))!.json()
    expect(rest.events.map((e: { seq: number }) => e.seq)).toEqual(nodes.slice(2).map((e) => e.seq))
  })

  it.each([
    ['empty', ''],
    ['empty entry', 'a.b,,c.d'],
    ['bare star', '*'],
    ['star inside', 'workflow.*.finished'],
    ['star without dot', 'workflow*'],
    ['space', 'a.b, c.d'],
    ['too many', Array.from({ length: 51 }, (_, i) => `t.${i}`).join(',')],
    ['too long', `a.${'x'.repeat(300)}`],
  ])('refuses a malformed filter (%s) with 400 INVALID_REQUEST', async (_name, value) => {
    const { engine } = await parkedRelease('t4')
    for (const live of ['', '&live=true']) {
      const res = (await engine.fetch(
        new Request(`http://x/runs/t4/events?types=${encodeURIComponent(value)}${live}`),
      ))!
      expect(res.status).toBe(400)
      expect((await res.json()).error.code).toBe('INVALID_REQUEST')
    }
  })

  it('refuses a repeated types parameter', async () => {
    const { engine } = await parkedRelease('t5')
    const res = (await engine.fetch(new Request('http://x/runs/t5/events?types=a.b&types=c.d')))!
    expect(res.status).toBe(400)
  })

  it('filters transient events by their type too', async () => {
    // An effect that publishes two transient events when the test lets it.
    let letTalk!: () => void
    const talking = new Promise<void>((resolve) => (letTalk = resolve))
    const tx = defineModule({
      namespace: 'tx',
      effects: {
        talk: defineEffect({
          execute: async (_input, ctx) => {
            await talking
            for (const type of ['agent.delta', 'other.delta']) ctx.publish(type, { text: type })
            return 'said'
          },
        }),
      },
    })
    const talk = defineWorkflow({
      name: 'talk',
      nodes: {
        t: { run: (ctx) => ctx.invoke('tx.talk') },
        rest: { after: ['t'], run: (ctx) => ctx.waitFor('agent.done') },
      },
    })
    const engine = createEngine({
      modules: [workflow({ definitions: [talk] }), tx],
      clock: manualClock(),
    })
    engines.push(engine)
    await engine.start(talk, undefined, { runId: 'r1' }) // resolves with the effect in flight
    const http = makeHandler(engine, { sse: { timers: manualTimers() } })
    const reader = sseReader(
      (await http.fetch(new Request('http://x/runs/r1/events?live=true&types=agent.*')))!,
    )
    const seqOf = async (type: string) =>
      (await engine.getEvents('r1')).find((e) => e.type === type)!.seq
    await engine.signal('r1', [{ type: 'agent.message' }, { type: 'other.thing' }])
    const message = await seqOf('agent.message')
    await reader.until((t) => idsOf(t).includes(message))
    letTalk()
    await (await engine.runtime).idle()
    await engine.signal('r1', [{ type: 'agent.done' }])
    const done = await seqOf('agent.done')
    const text = await reader.until((t) => idsOf(t).includes(done))
    expect(idsOf(text)).toEqual([message, done])
    expect(text).toContain('"type":"agent.delta"')
    expect(text).not.toContain('other.delta')
    await reader.cancel()
  })

  it('client: subscribeEvents and getEvents take types', async () => {
    const { engine, decide } = await parkedRelease('t6')
    const client = createEngineClient({
      baseUrl: 'http://x',
      fetch: async (r) => (await engine.fetch(r))!,
    })
    const seen: string[] = []
    const ended = new Promise((resolve) => {
      client.subscribeEvents('t6', (event) => seen.push(event.type), {
        types: ['approval.*'],
        onEnd: resolve,
      })
    })
    await decide()
    await ended
    expect(seen).toEqual(['approval.requested', 'approval.decided'])
    const { events } = await client.getEvents('t6', { types: ['workflow.node.started'], limit: 1 })
    expect(events.map((e) => e.type)).toEqual(['workflow.node.started'])
  })

  it('`skein events --types` filters, with and without --follow', async () => {
    const { engine, decide } = await parkedRelease('t7')
    const server = await engine.serve({ port: 0 })
    const cli = async (args: string[]) => {
      let stdout = ''
      const code = await runCli([...args, '--url', server.url], {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: { write: () => {} },
      })
      return { code, stdout }
    }
    const listed = await cli(['events', 't7', '--types', 'approval.*', '--json'])
    expect(listed.code).toBe(0)
    expect(JSON.parse(listed.stdout).events.map((e: { type: string }) => e.type)).toEqual([
      'approval.requested',
    ])
    const following = cli(['events', 't7', '--follow', '--types', 'approval.*', '--json'])
    await new Promise((resolve) => setTimeout(resolve, 50))
    await decide()
    const followed = await following
    expect(followed.code).toBe(0)
    const types = followed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).type)
    expect(types).toEqual(['approval.requested', 'approval.decided'])
  })
})
