// The graphs of the peers bench's Skein workloads, as bench/peers/skein.ts starts them and
// bench/profile-peers*.ts profile them: plain node maps (no Skein import), so a profiling script
// can hand them to whichever build of Skein it loads.

/** A chain of `n` steps, each invoking `bench.step` after the one before. */
export function chainNodes(n: number): Record<string, any> {
  return Object.fromEntries(
    Array.from({ length: n }, (_, i) => [
      `s${i}`,
      {
        after: i === 0 ? [] : [`s${i - 1}`],
        run: (ctx: any) => ctx.invoke('bench.step', { i }),
      },
    ]),
  )
}

/** Fan-out/join 1 → 16 → 1: `first`, 16 parallel `p<i>` after it, `join` after them all. */
export function fanNodes(): Record<string, any> {
  const nodes: Record<string, any> = {
    first: { run: (ctx: any) => ctx.invoke('bench.step', { i: 0 }) },
  }
  for (let i = 0; i < 16; i++) {
    nodes[`p${i}`] = { after: ['first'], run: (ctx: any) => ctx.invoke('bench.step', { i }) }
  }
  nodes.join = {
    after: Array.from({ length: 16 }, (_, i) => `p${i}`),
    run: (ctx: any) => ctx.invoke('bench.step', { i: 17 }),
  }
  return nodes
}
