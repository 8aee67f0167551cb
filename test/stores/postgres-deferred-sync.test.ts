import { makeEnvelopes } from 'skein/testing'
import { describe, expect, it } from 'vitest'
import { freshPostgresStore, postgresAvailable, testSchemas } from '../support/postgres.js'

// decisions.md, "A lease release and a group's worker tasks cost no fsync of their own": on
// Postgres a lease release commits with synchronous_commit off; a renewal and an append that
// is not deferred commit durably. A deferred constraint trigger on the run rows records the
// setting each transaction has when it commits (the trigger fires inside the COMMIT).

if (postgresAvailable('postgres-deferred-sync')) {
  const schemas = testSchemas('deferred_sync')

  describe('postgres commits without an fsync of their own', () => {
    it('a lease release commits with synchronous_commit off; a renewal commits durably', async () => {
      const store = freshPostgresStore(schemas)
      try {
        await store.ready()
        const s = `"${store.schema}"`
        await schemas.admin.query(`
          CREATE TABLE ${s}.seen (n serial, expires bigint, sync text);
          CREATE FUNCTION ${s}.note() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            INSERT INTO ${s}.seen (expires, sync)
              VALUES (NEW.lease_expires_at, current_setting('synchronous_commit'));
            RETURN NULL;
          END $$;
          CREATE CONSTRAINT TRIGGER note AFTER INSERT OR UPDATE ON ${s}.skein_runs
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${s}.note();`)
        const claim = { owner: 'h1', epoch: 1, expiresAt: 5_000, now: 1 }
        await store.append('a', makeEnvelopes('a', 1, 1), { expectedSeq: 0, lease: claim })
        await store.leases.renewLease('a', { ...claim, expiresAt: 9_000 })
        await store.leases.releaseLease('a', 'h1', 1)
        const { rows } = await schemas.admin.query(`SELECT expires, sync FROM ${s}.seen ORDER BY n`)
        expect(rows).toEqual([
          { expires: '5000', sync: 'on' },
          { expires: '9000', sync: 'on' },
          { expires: '0', sync: 'off' },
        ])
        expect(await store.leases.readLease('a')).toMatchObject({ owner: 'h1', expiresAt: 0 })
      } finally {
        await store.close()
      }
    })
  })
}
