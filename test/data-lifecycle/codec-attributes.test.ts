import { randomBytes } from 'node:crypto'
import { aesGcmCodec, type Engine } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { storeKinds } from '../support/store-kinds.js'

// Run attributes under a payload codec (docs/data-lifecycle.md, "What stays in clear"): the
// payload of a start or an attribute change is sealed, its attributes stay beside it in clear,
// so the stores index them and attribute search finds the run; readers see the payload whole.

const kinds = storeKinds('codec-attributes')
const newEngine = enginesStoppedAfterEach()
const MARKER = 'card-4111111111111111'
const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })

const order = defineWorkflow({
  name: 'order',
  attributes: { customer: 'string', stage: 'string' },
  nodes: {
    charge: {
      run: (ctx) => ({ charged: (ctx.input as { card: string }).card }),
      attributes: () => ({ stage: 'charged' }),
    },
  },
})

const found = async (engine: Engine, attributes: Record<string, string>) =>
  (await engine.listRunSummaries({ attributes })).runs.map((r) => r.runId)

describe.each(kinds)('attributes under a codec on $name', (kind) => {
  it('are searchable and read back, while the payloads around them are sealed', async () => {
    const store = kind.fresh().open()
    const engine = newEngine({ store, codec, modules: [workflow({ definitions: [order] })] })
    await engine.start(
      order,
      { card: MARKER },
      { runId: 'o-1', attributes: { customer: 'c-42' }, wait: 'settled' },
    )
    await engine.start(order, { card: 'other' }, { runId: 'o-2', attributes: { customer: 'c-7' } })
    expect(await found(engine, { customer: 'c-42' })).toEqual(['o-1'])
    expect(await found(engine, { stage: 'charged', customer: 'c-42' })).toEqual(['o-1'])
    expect((await engine.getRun('o-1')).attributes).toEqual({ customer: 'c-42', stage: 'charged' })
    const [started] = await engine.getEvents('o-1')
    expect(started.payload).toMatchObject({
      input: { card: MARKER },
      attributes: { customer: 'c-42' },
    })
    // As stored: the attributes in clear, the rest sealed.
    const [stored] = await store.read('o-1', { fromSeq: 1, limit: 1 })
    // `$sealed`: the codec's value, or a pointer to the appended batch it is sealed with.
    expect(stored.payload).toMatchObject({ attributes: { customer: 'c-42' } })
    expect(JSON.stringify((stored.payload as { $sealed?: unknown }).$sealed)).toMatch(
      /"kid":"k1"|^\{"\$inBatch":\d+\}$/,
    )
    expect(JSON.stringify(stored.payload)).not.toContain(MARKER)
  })
})
