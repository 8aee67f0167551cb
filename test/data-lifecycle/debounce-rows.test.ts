import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { aesGcmCodec, createEngine, type EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

// A debounce window (docs/flow-control.md, "Debounce") holds a start's input in the store: with
// a codec it holds it encoded, and deleting its run removes it (docs/data-lifecycle.md).

const MARKER = 'iban-DE89370400440532013000'
const dir = mkdtempSync(join(tmpdir(), 'skein-debounce-rows-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })

const save = defineWorkflow({
  name: 'save',
  flow: { debounce: { periodMs: 1000, key: (input: { doc: string; text: string }) => input.doc } },
  nodes: { save: { run: (ctx) => ctx.input } },
})

interface Target {
  name: string
  open(): EventStore
  /** The window rows as stored: run id and input text. */
  windows(): Promise<Array<{ run_id: string; input: string }>>
}

const targets: Array<() => Target> = [
  () => {
    const path = join(dir, `${Date.now()}.db`)
    return {
      name: 'sqlite',
      open: () => sqliteStore({ path }),
      async windows() {
        const db = new Database(path, { readonly: true })
        try {
          return db.prepare('SELECT run_id, input FROM skein_flow_debounce').all() as Array<{
            run_id: string
            input: string
          }>
        } finally {
          db.close()
        }
      },
    }
  },
]
if (postgresAvailable('debounce-rows')) {
  const schemas = testSchemas('debounce-rows')
  targets.push(() => {
    const schema = schemas.next()
    return {
      name: 'postgres',
      open: () => postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 3 }),
      async windows() {
        const { rows } = await schemas.admin.query(
          `SELECT run_id, input FROM "${schema}".skein_flow_debounce`,
        )
        return rows
      },
    }
  })
}

describe.each(targets.map((make) => ({ make, name: make().name })))(
  'debounce windows on $name',
  ({ make }) => {
    it('hold the last input encoded, start the run with it decoded, and go with the run', async () => {
      const target = make()
      const store = target.open()
      const engine = createEngine({ store, codec, modules: [workflow({ definitions: [save] })] })
      try {
        const { runId } = await engine.start(save, { doc: 'd1', text: `draft ${MARKER}` })
        const joined = await engine.start(save, { doc: 'd1', text: `final ${MARKER}` })
        expect(joined.runId).toBe(runId)
        const windows = await target.windows()
        expect(windows.map((w) => w.run_id)).toEqual([runId])
        expect(windows[0].input).not.toContain(MARKER)
        expect(await engine.result(runId, { timeoutMs: 10_000 })).toEqual({
          save: { doc: 'd1', text: `final ${MARKER}` },
        })
        await engine.deleteRun(runId)
        expect(await target.windows()).toEqual([])
      } finally {
        await engine.stop()
        await store.close?.()
      }
    })
  },
)
