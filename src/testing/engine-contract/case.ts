import type { WorldCase } from '../world-case.js'
import type { EngineWorld } from './world.js'

/** Registers one engine contract test: its body gets a fresh world, closed after it. */
export type ContractCase = WorldCase<EngineWorld>

/** Settles to the error a promise rejects with (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the call to reject, but it resolved')
}
