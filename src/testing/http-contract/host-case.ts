import type { HostWorld } from './host-world.js'

/** Registers one contract test: its body gets a fresh host world, closed after it. */
export type HostCase = (title: string, body: (world: HostWorld) => Promise<void>) => void
