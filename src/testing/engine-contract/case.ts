import type { WorldCase } from '../world-case.js'
import type { EngineWorld } from './world.js'

/** Registers one engine contract test: its body gets a fresh world, closed after it. */
export type ContractCase = WorldCase<EngineWorld>
