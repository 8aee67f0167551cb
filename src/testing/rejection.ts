/** Settles to the error a promise rejects with (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the call to reject, but it resolved')
}
