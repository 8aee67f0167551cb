import { createEngine, defineEffect, defineModule, type Engine, TerminalError } from 'skein'
import { approval } from 'skein/approval'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import type { AuthorizeHook } from '../../src/http/authorize.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'

/** A workflow with a gate: `draft` → `review` (human gate) → `publish` (an effect). */
export const release = defineWorkflow({
  name: 'release',
  nodes: {
    draft: { run: ({ input }) => ({ text: `About ${input?.topic ?? 'nothing'}` }) },
    review: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    publish: {
      after: ['review'],
      when: ({ results }) => results.review.outcome === 'approve',
      run: (ctx) => ctx.invoke('docs.publish', { text: ctx.results.draft.text }),
    },
  },
  output: ({ results }) => ({ published: results.publish !== undefined }),
})

/** A workflow whose effect fails terminally: an effect attempt an operator can retry. */
export const broken = defineWorkflow({
  name: 'broken',
  nodes: { pay: { run: (ctx) => ctx.invoke('docs.broken', null) } },
})

const docs = defineModule({
  namespace: 'docs',
  effects: {
    publish: defineEffect<{ text: string }, { url: string }>({
      execute: async (input) => ({ url: `https://docs/${input.text.length}` }),
    }),
    broken: defineEffect({
      execute: async () => {
        throw new TerminalError('card declined')
      },
    }),
  },
})

export function realEngine(options: { authorize?: AuthorizeHook } = {}) {
  const store = memoryStore()
  const engine: Engine = createEngine({
    modules: [workflow({ definitions: [release, broken] }), approval(), docs],
    clock: manualClock(),
    store,
    ...options,
  })
  return { engine, store }
}

export const START_RELEASE = { kind: 'workflow', definitionName: 'release' }
