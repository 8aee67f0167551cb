// One claimant process for the claim race (claim-race.test.ts). argv: <store> <owner> <names>
// <leaseMs> <runMs>, store `sqlite:<path>` or `postgres:<schema>` (SKEIN_PG_URL). Claims every
// name over and over on the wall clock, lets some go, pauses past the lease now and then, and
// prints one JSON line: every grant with when it was held, and the count of refusals.
import type { EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'

const [spec, owner, namesText, leaseText, runText] = process.argv.slice(2)
const names = Number(namesText)
const leaseMs = Number(leaseText)
const runMs = Number(runText)

const store: EventStore = spec.startsWith('sqlite:')
  ? sqliteStore({ path: spec.slice('sqlite:'.length) })
  : postgresStore(
      { connectionString: process.env.SKEIN_PG_URL ?? '' },
      { schema: spec.slice('postgres:'.length) },
    )
const claims = store.claims
if (!claims) throw new Error('the store has no claims')

interface Grant {
  name: string
  owner: string
  epoch: number
  /** When the grant was in hand, and when it ended (expiry, or the decision to let it go). */
  from: number
  to: number
}
const grants: Grant[] = []
let refused = 0
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const until = Date.now() + runMs
while (Date.now() < until) {
  for (let i = 0; i < names; i++) {
    const name = `race:${i}`
    const now = Date.now()
    const claim = await claims.claim(name, owner, now, now + leaseMs)
    if (!claim) {
      refused++
      continue
    }
    const grant = { name, owner, epoch: claim.epoch, from: Date.now(), to: claim.expiresAt }
    grants.push(grant)
    if (Math.random() < 0.2) {
      // Letting go ends this epoch's hold here, whichever renewal of it came last.
      const at = Date.now()
      for (const g of grants)
        if (g.name === name && g.epoch === claim.epoch) g.to = Math.min(g.to, at)
      await claims.release(name, owner, claim.epoch)
    }
  }
  // Now and then pause past the lease, so the other process takes names over.
  await sleep(Math.random() < 0.3 ? leaseMs * 1.5 : Math.random() * 5)
}
await store.close?.()
process.stdout.write(`${JSON.stringify({ owner, grants, refused })}\n`)
