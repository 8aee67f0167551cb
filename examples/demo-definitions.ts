// The demo host's definitions: a workflow that parks on a human gate, one that sleeps, and one
// whose effect fails twice before it succeeds (retried by policy). `demoModules()` also picks
// up the agent and evaluator examples when they are present.
import { type Definition, defineEffect, defineModule, type Module } from 'skein'
import { approval } from 'skein/approval'
import { defineWorkflow, workflow } from 'skein/workflow'

/** Attempts per effect id, so the flaky effect fails the first two attempts of each run. */
const attempts = new Map<string, number>()

export const demoEffects = defineModule({
  namespace: 'demo',
  effects: {
    publish: defineEffect<{ text: string }, { url: string }>({
      retry: { maxAttempts: 3, backoffMs: 200 },
      execute: async (_input, ctx) => ({ url: `https://example.test/posts/${ctx.effectId}` }),
    }),
    flaky: defineEffect<{ label?: string } | null, { ok: true; attempts: number }>({
      retry: { maxAttempts: 5, backoffMs: 250 },
      execute: async (_input, ctx) => {
        // ctx.attempt is durable, so the count survives a restart of the host.
        const n = Math.max(ctx.attempt, (attempts.get(ctx.effectId) ?? 0) + 1)
        attempts.set(ctx.effectId, n)
        if (n < 3) throw new Error(`upstream unavailable (attempt ${n} of 3)`)
        attempts.delete(ctx.effectId)
        return { ok: true, attempts: n }
      },
    }),
  },
})

/** Drafts a post, waits for a human decision, publishes only when approved. */
export const review = defineWorkflow({
  name: 'review',
  nodes: {
    draft: {
      run: ({ input }) => ({
        text: `A post about ${(input as { topic?: string })?.topic ?? 'Skein'}`,
      }),
    },
    approve: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish this post?' }) },
    publish: {
      after: ['approve'],
      when: ({ results }) => results.approve.outcome === 'approve',
      run: (ctx) => ctx.invoke('demo.publish', { text: ctx.results.draft.text }),
    },
  },
  output: ({ results }) => ({
    outcome: results.approve.outcome,
    url: results.publish?.url ?? null,
  }),
})

/** Sleeps (5 s by default, or `input.ms`), then finishes: a durable timer. */
export const nap = defineWorkflow({
  name: 'nap',
  nodes: {
    sleep: { run: (ctx) => ctx.sleep(Number((ctx.input as { ms?: number })?.ms ?? 5000)) },
    wake: { after: ['sleep'], run: () => ({ awake: true }) },
  },
})

/** Calls an effect that fails twice and succeeds on the third attempt. */
export const retried = defineWorkflow({
  name: 'retried',
  nodes: {
    call: { run: (ctx) => ctx.invoke('demo.flaky', { label: 'demo' }) },
    done: { after: ['call'], run: ({ results }) => ({ attempts: results.call.attempts }) },
  },
})

export const demoWorkflows = [review, nap, retried]

interface ExampleModule {
  modules?: Module[]
}

/** Loads an optional example by path (a variable specifier: the file may not exist). */
async function optionalExample(file: string): Promise<Module[]> {
  const specifier = new URL(file, import.meta.url).href
  try {
    const mod = (await import(specifier)) as ExampleModule
    return Array.isArray(mod.modules) ? mod.modules : []
  } catch (error) {
    if ((error as { code?: string })?.code === 'ERR_MODULE_NOT_FOUND') return []
    throw error
  }
}

/**
 * Every module the demo host registers. The agent/evaluator examples contribute their own
 * modules when present; a namespace they share with ours (`workflow`, `approval`) is
 * registered once, with the definitions of both merged.
 */
export async function demoModules(): Promise<Module[]> {
  const base: Module[] = [workflow({ definitions: demoWorkflows }), approval(), demoEffects]
  const extra = [
    ...(await optionalExample('./agent-support.ts')),
    ...(await optionalExample('./refund-evaluated.ts')),
  ]
  return mergeModules([...base, ...extra])
}

/** One module per namespace; definitions of repeated namespaces are concatenated. */
export function mergeModules(modules: readonly Module[]): Module[] {
  const byNamespace = new Map<string, Module>()
  for (const m of modules) {
    const seen = byNamespace.get(m.namespace)
    if (!seen) {
      byNamespace.set(m.namespace, m)
      continue
    }
    const definitions = [...(seen.definitions ?? [])]
    const label = (d: Definition) => `${d.kind}/${d.name}@${d.version}`
    const known = new Set(definitions.map(label))
    for (const d of m.definitions ?? []) if (!known.has(label(d))) definitions.push(d)
    byNamespace.set(m.namespace, defineModule({ ...seen, definitions }))
  }
  return [...byNamespace.values()]
}

/** `skein serve examples/demo-definitions.ts` loads this. */
export default demoModules
