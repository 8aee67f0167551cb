import { createEngine, type Engine, memoryStore } from 'skein'
import { agent, defineAgent, type ModelAdapter, userMessage } from 'skein/agent'
import { afterEach, describe, expect, it } from 'vitest'
import { cloneFold, commandOf, foldEvents } from '../../src/core/fold/index.js'
import { cloneJson } from '../../src/core/json.js'
import { storeKinds } from '../support/store-kinds.js'

// A conversation makes ~3 keyed commands per turn, so 120 turns cross the archive threshold
// (64 new keys) several times.
const chat = defineAgent({ name: 'chat', instructions: 'x', conversational: true })
let calls = 0
const echo: ModelAdapter = {
  generate: async ({ messages }) => {
    calls++
    return { message: { role: 'assistant', content: `seen ${messages.length}` } }
  },
}
const modules = () => [agent({ definitions: [chat], model: echo })]
const kinds = storeKinds('command-archive')
const engines: Engine[] = []
afterEach(async () => {
  for (const e of engines.splice(0)) await e.stop()
})

async function converse(engine: Engine, runId: string, from: number, to: number) {
  for (let i = from; i < to; i++) await engine.signal(runId, [userMessage(`m${i}`)])
}

describe('command archive (long threads)', () => {
  it('folds the same from any snapshot point, and copies never change', async () => {
    const store = memoryStore()
    const engine = createEngine({ store, modules: modules() })
    engines.push(engine)
    const { runId, threadId } = await engine.start(chat)
    await converse(engine, runId, 0, 120)
    const registry = (await engine.runtime).registry
    const events = await store.read(runId)
    const full = foldEvents(registry, runId, events)
    const book = full.books[threadId]
    expect(book.archived).toBeDefined()
    expect(Object.keys(book.archived ?? {}).length).toBeGreaterThan(256)
    expect(Object.keys(book.commands).length).toBeLessThan(64)
    // Every key the thread ever issued is still found: dedup survives the archive.
    for (const e of events) {
      if (e.type === 'runtime.effect.requested') {
        const key = (e.payload as { key: string }).key
        expect(commandOf(book, key)?.id).toBe((e.payload as { effectId: string }).effectId)
      }
    }
    for (const cut of [1, 64, 200, Math.floor(events.length / 2), events.length - 3]) {
      const atCut = foldEvents(registry, runId, events.slice(0, cut))
      const frozen = cloneJson(atCut)
      const copy = cloneFold(atCut)
      foldEvents(registry, runId, events.slice(cut), atCut)
      expect(cloneJson(atCut)).toEqual(cloneJson(full))
      expect(cloneJson(copy)).toEqual(frozen) // shared archives were not touched
      // A snapshot parsed from JSON resumes to the same fold.
      const resumed = foldEvents(registry, runId, events.slice(cut), cloneFold(cloneJson(frozen)))
      expect(cloneJson(resumed)).toEqual(cloneJson(full))
    }
  })

  it.each(kinds.filter((kind) => kind.name !== 'memory'))(
    'a long conversation survives a restart from its archived snapshot without repeating calls ($name store)',
    async ({ fresh }) => {
      const storage = fresh()
      const first = createEngine({ store: storage.open(), modules: modules() })
      engines.push(first)
      const { runId } = await first.start(chat)
      calls = 0
      await converse(first, runId, 0, 100)
      expect(calls).toBe(100)
      await first.stop()
      engines.splice(0)

      const store = storage.open()
      const second = createEngine({ store, modules: modules() })
      engines.push(second)
      const snapshot = await store.snapshots!.latest(runId)
      expect(snapshot?.format).toBe(2)
      await converse(second, runId, 100, 105)
      expect(calls).toBe(105) // no model call of the first 100 turns ran again
      const events = await store.read(runId)
      const replies = events.filter(
        (e) => e.type === 'agent.message' && (e.payload as any).role === 'assistant',
      )
      expect(replies).toHaveLength(105)
      // The last call saw 105 user messages and the 104 replies before it.
      expect((replies[104].payload as any).content).toBe('seen 209')
      expect((await second.getRun(runId)).status).toBe('running')
    },
  )

  it('still reads format-1 snapshots (no archive) written by an older skein', async () => {
    const store = memoryStore()
    const engine = createEngine({ store, modules: modules(), runCacheSize: 0 })
    engines.push(engine)
    const { runId, threadId } = await engine.start(chat)
    await converse(engine, runId, 0, 30)
    const latest = await store.snapshots!.latest(runId)
    const data = cloneJson(latest!.data) as any
    // What a format-1 fold looked like: every command in `commands`, no archive fields.
    const book = data.books[threadId]
    book.commands = { ...book.archived, ...book.commands }
    delete book.archived
    delete book.fresh
    await store.snapshots!.save({ ...latest!, seq: latest!.seq, format: 1, data })
    calls = 0
    await converse(engine, runId, 30, 33)
    expect(calls).toBe(3)
    const replies = (await store.read(runId)).filter(
      (e) => e.type === 'agent.message' && (e.payload as any).role === 'assistant',
    )
    expect(replies).toHaveLength(33)
  })
})
