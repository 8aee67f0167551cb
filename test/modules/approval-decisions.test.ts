import {
  type AuthorizeHook,
  bearerAuth,
  commands,
  createEngine,
  defineKind,
  defineModule,
  type Engine,
  type ServerHandle,
} from 'skein'
import { approval, decision, defineApproval, pendingApprovals } from 'skein/approval'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'

// A decision answers a pending approval of the run, with one of its
// gate's outcomes, and records who decided as the engine knows it (the authorize hook's
// identity), never as the sender claims it.

const edit = defineWorkflow({
  name: 'edit',
  nodes: {
    gate: {
      run: (ctx) =>
        ctx.gate({
          title: 'Ship it?',
          actions: [
            { id: 'ship', label: 'Ship', outcome: 'approve' },
            { id: 'edit', label: 'Ship with edits', outcome: 'approve' },
            { id: 'drop', label: 'Drop', outcome: 'reject' },
          ],
        }),
    },
  },
  output: ({ results }) => results.gate,
})
const refund = defineApproval({ name: 'refund', title: () => 'Refund?' })

/** A custom kind whose wait on approval.decided carries no `expect` (as gates did before). */
const legacyGate = defineModule({
  namespace: 'legacy',
  kinds: {
    waiter: defineKind<null>({
      initialState: () => null,
      decide: (_s, ctx) => {
        const got = ctx.outcome('decision')
        if (got.status === 'completed') return [commands.complete(got.value)]
        return [
          commands.wait(
            { event: { type: 'approval.decided', match: { approvalId: 'old' } } },
            { key: 'decision' },
          ),
        ]
      },
    }),
  },
  definitions: [{ kind: 'waiter', name: 'old-gate', version: 'v1' }],
})

let engine: Engine
let server: ServerHandle | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
  await engine?.stop()
})

function makeEngine(authorize?: AuthorizeHook) {
  engine = createEngine({
    modules: [workflow({ definitions: [edit] }), approval({ definitions: [refund] }), legacyGate],
    clock: manualClock(),
    ...(authorize ? { authorize } : {}),
  })
  return engine
}

async function pendingOf(runId: string) {
  const [item] = (await engine.project(runId, pendingApprovals)).items
  return item.approvalId
}

const decidedPayload = async (runId: string) =>
  (await engine.getEvents(runId)).find((e) => e.type === 'approval.decided')?.payload

describe('a decision answers a pending approval with one of its outcomes', () => {
  it('decision("not-an-id") is refused and leaves the run as it was', async () => {
    makeEngine()
    const { runId } = await engine.start(edit)
    const tail = (await engine.getEvents(runId)).length
    const error = await engine.signal(runId, [decision('not-an-id', 'approve')]).catch((e) => e)
    expect(error.code).toBe('INVALID_EVENT')
    expect(error.message).toContain('approval "not-an-id" is not pending')
    expect((await engine.getEvents(runId)).length).toBe(tail)
  })

  it('a second decision of the same approval is refused; the first stands', async () => {
    makeEngine()
    const { runId } = await engine.start(refund)
    const approvalId = await pendingOf(runId)
    const first = await engine.signal(runId, [decision(approvalId, 'reject')])
    expect(first.status).toBe('completed')
    const tail = (await engine.getEvents(runId)).length
    const second = await engine.signal(runId, [decision(approvalId, 'approve')]).catch((e) => e)
    expect(second.code).toBe('INVALID_EVENT')
    expect((await engine.getEvents(runId)).length).toBe(tail)
    expect((await engine.getRun(runId)).output).toMatchObject({ outcome: 'reject' })
  })

  it('custom actions: by outcome, or by action id with its outcome; nothing else', async () => {
    makeEngine()
    const byAction = await engine.start(edit)
    const done = await engine.signal(byAction.runId, [
      decision(await pendingOf(byAction.runId), {
        actionId: 'edit',
        outcome: 'approve',
        payload: { text: 'v2' },
      }),
    ])
    expect(done.output).toMatchObject({
      actionId: 'edit',
      outcome: 'approve',
      payload: { text: 'v2' },
    })

    const byOutcome = await engine.start(edit)
    const rejected = await engine.signal(byOutcome.runId, [
      decision(await pendingOf(byOutcome.runId), 'reject'),
    ])
    expect(rejected.output).toMatchObject({ outcome: 'reject' })

    const refused = await engine.start(edit)
    const id = await pendingOf(refused.runId)
    for (const choice of [
      { outcome: 'maybe' },
      { actionId: 'approve', outcome: 'approve' },
      { actionId: 'drop', outcome: 'approve' },
    ]) {
      const error = await engine.signal(refused.runId, [decision(id, choice)]).catch((e) => e)
      expect(error.code, JSON.stringify(choice)).toBe('INVALID_EVENT')
    }
    expect((await engine.getRun(refused.runId)).status).toBe('running')
  })

  it('a wait recorded without the gate’s actions still takes a decision (older logs)', async () => {
    makeEngine()
    const { runId } = await engine.startRun({ kind: 'waiter', definitionName: 'old-gate' })
    const done = await engine.signal(runId, [decision('old', { outcome: 'whatever' })])
    expect(done.status).toBe('completed')
  })
})

describe('the decider is the caller’s identity', () => {
  it('over HTTP: the authorize hook’s identity, with the display name the body gave', async () => {
    makeEngine(bearerAuth({ write: 'w-token' }))
    server = await engine.serve({ port: 0 })
    const { runId } = await engine.start(refund)
    const approvalId = await pendingOf(runId)
    const post = (payload: unknown) =>
      fetch(`${server!.url}/runs/${runId}/events`, {
        method: 'POST',
        headers: { authorization: 'Bearer w-token', 'content-type': 'application/json' },
        body: JSON.stringify({ events: [{ type: 'approval.decided', payload }] }),
      })
    const claimed = await post({ approvalId, outcome: 'approve', by: 'the-ceo' })
    expect(claimed.status).toBe(400)
    expect((await claimed.json()).error.message).toContain('by is recorded by the engine')
    const ok = await post({ approvalId, outcome: 'approve', name: 'Ada' })
    expect(ok.status).toBe(200)
    expect(await decidedPayload(runId)).toEqual({
      approvalId,
      outcome: 'approve',
      name: 'Ada',
      by: { token: 'write' },
    })
  })

  it('with open access the decider is recorded as null (no identity)', async () => {
    makeEngine()
    server = await engine.serve({ port: 0 })
    const { runId } = await engine.start(refund)
    const approvalId = await pendingOf(runId)
    const response = await fetch(`${server.url}/runs/${runId}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events: [decision(approvalId, 'approve')] }),
    })
    expect(response.status).toBe(200)
    expect(await decidedPayload(runId)).toEqual({ approvalId, outcome: 'approve', by: null })
  })

  it('embed: the identity option of signal', async () => {
    makeEngine()
    const { runId } = await engine.start(refund)
    const approvalId = await pendingOf(runId)
    await engine.signal(runId, [decision(approvalId, 'approve')], {
      identity: { user: 'ada@example.com' },
    })
    expect(await decidedPayload(runId)).toMatchObject({ by: { user: 'ada@example.com' } })
  })
})
