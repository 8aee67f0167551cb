// What the engine contract runs: real modules (workflow, approval, agent with the echo model,
// evaluator) and one module of effects whose behaviour each test steers through its own
// `SuiteControl`, so tests never share state.

import {
  commands,
  defineEffect,
  defineKind,
  defineModule,
  type Module,
  payload,
  TerminalError,
  type Worker,
  type WorkerTask,
} from '../../index.js'
import { agent, defineAgent } from '../../modules/agent/index.js'
import { approval } from '../../modules/approval/index.js'
import { defineEvaluator, evaluator } from '../../modules/evaluator/index.js'
import { shape } from '../../modules/shared/shape.js'
import { defineWorkflow, workflow } from '../../modules/workflow/index.js'

/** Per-test switches and records of the suite's effects. */
export interface SuiteControl {
  /** Texts `suite.publish` was called with. */
  published: string[]
  /** Calls of `suite.flaky`: it fails its first two. */
  flakyCalls: number
  /** While true, `suite.charge` fails (its gateway is down). */
  gatewayDown: boolean
  /** One release per `suite.slow` attempt in flight, oldest first. */
  slowRelease: Array<() => void>
  /** Effect ids of `suite.slow` attempts whose AbortSignal fired. */
  aborted: string[]
  /** While true, `suite.call` never settles (the process dies with it in flight). */
  callHangs: boolean
  /** Calls of `suite.call`. */
  calls: number
}

export function newControl(): SuiteControl {
  return {
    published: [],
    flakyCalls: 0,
    gatewayDown: true,
    slowRelease: [],
    aborted: [],
    callHangs: false,
    calls: 0,
  }
}

/** A worker that records the tasks it is handed; tests answer them with `workerCallback`. */
export interface RecordingWorker extends Worker {
  readonly dispatched: WorkerTask[]
}

export function recordingWorker(): RecordingWorker {
  const dispatched: WorkerTask[] = []
  return {
    dispatched,
    dispatch(task) {
      dispatched.push(task)
    },
  }
}

const block = (signal: AbortSignal, onAbort: () => void) =>
  new Promise<never>((_resolve, reject) => {
    signal.addEventListener('abort', () => {
      onAbort()
      reject(new Error('aborted'))
    })
  })

function suiteEffects(control: SuiteControl): Module {
  return defineModule({
    namespace: 'suite',
    events: {
      ping: payload<{ n: number }>(),
      noted: payload<{ note: string }>(),
      shipped: payload<{ id: string }>(),
    },
    effects: {
      double: defineEffect<{ n: number }, { doubled: number }>({
        execute: async (input) => ({ doubled: input.n * 2 }),
      }),
      publish: defineEffect<{ text: string }, { url: string }>({
        retry: { maxAttempts: 3, backoffMs: 100 },
        execute: async (input) => {
          control.published.push(input.text)
          return { url: `https://docs/${input.text.length}` }
        },
      }),
      flaky: defineEffect<null, { ok: true }>({
        retry: { maxAttempts: 3, backoffMs: 100 },
        execute: async () => {
          control.flakyCalls++
          if (control.flakyCalls < 3) throw new Error(`flaky ${control.flakyCalls}`)
          return { ok: true }
        },
      }),
      broken: defineEffect({
        execute: async () => {
          throw new TerminalError('card declined')
        },
      }),
      charge: defineEffect({
        retry: { maxAttempts: 1 },
        execute: async () => {
          if (control.gatewayDown) throw new Error('gateway down')
          return { charged: true }
        },
      }),
      noting: defineEffect<null, string>({
        execute: async (_input, ctx) => {
          ctx.emit('suite.noted', { note: 'emitted with the result' })
          return 'noted'
        },
      }),
      slow: defineEffect<null, string>({
        execute: (_input, ctx) =>
          new Promise((resolve, reject) => {
            control.slowRelease.push(() => resolve('slow done'))
            block(ctx.signal, () => control.aborted.push(ctx.effectId)).catch(reject)
          }),
      }),
      hang: defineEffect<null, string>({
        timeoutMs: 1000,
        retry: { maxAttempts: 2, backoffMs: 10 },
        execute: (_input, ctx) => block(ctx.signal, () => {}),
      }),
      call: defineEffect({
        retry: { maxAttempts: 3 },
        execute: () => {
          control.calls++
          // A hung call ignores its AbortSignal too: only the process's death ends it.
          return control.callHangs ? new Promise(() => {}) : { ok: true }
        },
      }),
      external: defineEffect({ execution: 'worker' }),
      job: defineEffect({ execution: 'worker', retry: { maxAttempts: 3, backoffMs: 100 } }),
      local: defineEffect({ execute: async () => 'local' }),
    },
    kinds: {
      looper: defineKind<number>({
        initialState: () => 0,
        step: (n, event) => (event.type === 'suite.ping' ? n + 1 : n),
        decide: (n) => [commands.emit('suite.ping', { n })],
      }),
      chain: defineKind<null>({
        initialState: () => null,
        decide: (_state, ctx) => {
          const first = ctx.outcome('a')
          if (first.status === 'none' || first.status === 'pending')
            return [commands.invoke('suite.double', { n: 2 }, { key: 'a' })]
          if (first.status !== 'completed') return [commands.fail('a failed')]
          const second = ctx.outcome('b')
          const n = (first.value as { doubled: number }).doubled
          if (second.status === 'none' || second.status === 'pending')
            return [commands.invoke('suite.double', { n }, { key: 'b' })]
          if (second.status !== 'completed') return [commands.fail('b failed')]
          return [commands.complete(second.value)]
        },
      }),
    },
    definitions: [LOOPER, CHAIN],
  })
}

export const LOOPER = { kind: 'looper', name: 'forever', version: 'v1' } as const
export const CHAIN = { kind: 'chain', name: 'double-twice', version: 'v1' } as const

export const gated = defineWorkflow({
  name: 'gated',
  input: shape<{ orderId: string; amount: number }>({ orderId: 'string', amount: 'number' }),
  nodes: {
    check: { run: ({ input }) => ({ ok: input.amount < 1000 }) },
    approve: { after: ['check'], run: (ctx) => ctx.gate({ title: `Order ${ctx.input.orderId}` }) },
    done: { after: ['approve'], run: ({ results }) => results.approve.outcome },
  },
})

export const release = defineWorkflow({
  name: 'release',
  nodes: {
    draft: { run: ({ input }) => ({ text: `About ${input.topic}` }) },
    review: { after: ['draft'], run: (ctx) => ctx.gate({ title: 'Publish?' }) },
    publish: {
      after: ['review'],
      when: ({ results }) => results.review.outcome === 'approve',
      run: (ctx) => ctx.invoke('suite.publish', { text: ctx.results.draft.text }),
    },
  },
  output: ({ results }) => ({ published: results.publish !== undefined }),
})

export const pure = defineWorkflow({
  name: 'pure',
  nodes: {
    a: { run: ({ input }) => input.n + 1 },
    b: { after: ['a'], run: ({ results }) => results.a * 2 },
  },
})

export const nap = defineWorkflow({
  name: 'nap',
  nodes: {
    wait: { run: (ctx) => ctx.sleep(60_000) },
    after: { after: ['wait'], run: () => 'awake' },
  },
})

export const waiter = defineWorkflow({
  name: 'waiter',
  nodes: {
    w: { run: (ctx) => ctx.waitFor('shop.paid', { match: { orderId: 'o1' }, timeoutMs: 5000 }) },
  },
})

export const child = defineWorkflow({
  name: 'child',
  nodes: { x: { run: ({ input }) => input.n * 10 } },
})

export const parent = defineWorkflow({
  name: 'parent',
  nodes: { c: { run: (ctx) => ctx.spawn(child, { n: 4 }) } },
  output: ({ results }) => results.c.x,
})

export const slowFlow = defineWorkflow({
  name: 'slow-flow',
  nodes: { s: { run: (ctx) => ctx.invoke('suite.slow') } },
})

export const parentOfSlow = defineWorkflow({
  name: 'parent-of-slow',
  nodes: {
    child: { run: (ctx) => ctx.spawn(slowFlow) },
    other: { run: (ctx) => ctx.waitFor('suite.noted') },
  },
})

export const failing = defineWorkflow({
  name: 'failing',
  nodes: { a: { run: (ctx) => ctx.invoke('suite.broken') } },
})

export const skipping = defineWorkflow({
  name: 'skipping',
  nodes: {
    a: { run: (ctx) => ctx.invoke('suite.broken'), onFailure: 'skip' },
    b: { after: ['a'], run: () => 'b ran' },
  },
})

export const falling = defineWorkflow({
  name: 'falling',
  nodes: {
    a: { run: (ctx) => ctx.invoke('suite.broken'), onFailure: { fallback: 'plan_b' } },
    plan_b: { run: () => 'fallback result' },
    c: { after: ['a'], run: ({ results }) => `c saw ${results.a}` },
  },
})

/** A workflow of one node invoking `effect`, then a node reading its result. */
const invoking = (name: string, effect: string) =>
  defineWorkflow({
    name,
    nodes: {
      a: { run: (ctx) => ctx.invoke(effect, { n: 1 }) },
      b: { after: ['a'], run: ({ results }) => ({ got: results.a }) },
    },
  })

export const flaky = invoking('flaky', 'suite.flaky')
export const noting = invoking('noting', 'suite.noting')
export const hanging = invoking('hanging', 'suite.hang')
export const external = invoking('external', 'suite.external')
export const charge = invoking('charge', 'suite.charge')
export const calling = invoking('calling', 'suite.call')
export const job = invoking('job', 'suite.job')
export const local = invoking('local', 'suite.local')

export const risk = defineEvaluator({
  name: 'refund-risk',
  description: 'Routes a refund to auto-approval or human review',
  input: shape<{ amount: number }>({ amount: 'number' }),
  routes: ['auto', 'review'],
  evaluate: ({ amount }) =>
    amount > 100
      ? { route: 'review', score: amount / 1000, reason: 'large refund' }
      : { route: 'auto', score: amount / 1000 },
})

export const refund = defineWorkflow({
  name: 'refund',
  nodes: {
    check: { run: (ctx) => ctx.evaluate(risk, { amount: ctx.input.amount }) },
    pay: {
      after: ['check'],
      when: ({ results }) => results.check.route === 'auto',
      run: () => 'paid',
    },
    queue: {
      after: ['check'],
      when: ({ results }) => results.check.route === 'review',
      run: () => 'queued',
    },
  },
  output: ({ results }) => ({ route: results.check.route, pay: results.pay, queue: results.queue }),
})

export const echoAgent = defineAgent({ name: 'echo', instructions: 'x' })
export const chat = defineAgent({ name: 'chat', instructions: 'x', conversational: true })

const WORKFLOWS = [
  gated,
  release,
  pure,
  nap,
  waiter,
  child,
  parent,
  slowFlow,
  parentOfSlow,
  failing,
  skipping,
  falling,
  flaky,
  noting,
  hanging,
  external,
  charge,
  calling,
  job,
  local,
  refund,
]

/** Every module the suite's engines run, its effects steered by `control`. */
export function suiteModules(control: SuiteControl): Module[] {
  return [
    workflow({ definitions: WORKFLOWS }),
    approval(),
    agent({ definitions: [echoAgent, chat] }),
    evaluator({ definitions: [risk] }),
    suiteEffects(control),
  ]
}
