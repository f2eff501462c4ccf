package io.sluice.core.intake;

import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * The durable queue of background jobs (a store port: in memory for one replica and tests, Redis
 * Streams across replicas). Every call is atomic in the store; a stage that completes normally
 * means the store acknowledged it. Keys live under the caller's {@code prefix} ({@code
 * quotas.keyPrefix}).
 *
 * <p>Per pool, the waiting jobs are in arrival order; per tenant, the store counts its waiting jobs
 * and their work (the caps). A waiting job past its expiry is made {@code expired} by the next call
 * that sees it (a read, a cancel, an enqueue sweeps a bounded number), so the caps never count a
 * stale job.
 */
public interface JobStore {
  /**
   * Writes {@code job} if its tenant's caps allow it: into its pool's queue (Redis: {@code XADD} to
   * the pool's stream, a hash per job), its tenant's counts raised.
   */
  CompletionStage<Enqueued> enqueue(String prefix, NewJob job, Caps caps);

  /**
   * The job {@code id} as {@code tenant} may see it, or null when it does not exist, expired from
   * the store, or is another tenant's (the two are never told apart). A job it finds past its
   * expiry ends {@code expired}, kept {@code retentionMillis}.
   */
  CompletionStage<@Nullable JobView> read(
      String prefix, String tenant, String id, long nowMillis, long retentionMillis);

  /**
   * Cancels {@code tenant}'s job {@code id}: a waiting one leaves the queue and its body is dropped
   * (its status {@code cancelled} kept for {@code retentionMillis}); a running one is marked {@code
   * cancelled} (its result, when it comes, is not kept); a done one stays as it is. Null as {@link
   * #read}.
   */
  CompletionStage<@Nullable JobView> cancel(
      String prefix, String tenant, String id, long nowMillis, long retentionMillis);

  /**
   * Claims a job of {@code pool} to run, for {@code consumer} (a replica): first one whose claim is
   * older than {@code leaseMillis} (its replica died: reclaimed), else the oldest waiting one; it
   * is then {@code in_progress}. A waiting job past its expiry found on the way ends {@code
   * expired} instead; a cancelled one is dropped. Null when none waits. At least once: a job whose
   * replica dies is claimed again after its lease ({@link Claimed#attempt} counts the claims).
   */
  CompletionStage<@Nullable Claimed> claim(
      String prefix,
      String pool,
      String consumer,
      long nowMillis,
      long leaseMillis,
      long retentionMillis);

  /**
   * Ends a claimed job {@code status} ({@code completed} with its result, or {@code failed} with
   * the upstream's typed error), kept {@code retentionMillis}; a job cancelled while it ran stays
   * {@code cancelled} and its result is not kept. Idempotent: true only for the call that ended it
   * (a second completion, say a reclaimed job's first replica finishing late, changes nothing).
   */
  CompletionStage<Boolean> complete(
      String prefix,
      String id,
      JobStatus status,
      byte @Nullable [] result,
      @Nullable String error,
      long nowMillis,
      long retentionMillis);

  /**
   * The claimed job {@code id}'s dispatched request was admitted by its pool: it runs now, and from
   * here reads {@code in_progress}. A claimed job not started yet reads {@code queued} (position
   * 0): its request may still wait in Sluice's queue, or be turned away and given back ({@link
   * #release}), so its status never flaps while nothing runs. True for the call that started it;
   * false when it is not claimed (waiting, ended, unknown) or already started. Not fenced by the
   * claim's attempt (the dispatched request carries only the id): a stale attempt's request
   * admitted late starts the job's current claim, which does run it.
   */
  CompletionStage<Boolean> start(String prefix, String id);

  /**
   * Gives a claimed job back without completing it (the pool turned it away on arrival: no room
   * after all), so that the next claim by any replica takes it at once instead of after its lease.
   * It waits again in its place (arrival order), its tenant's caps still counting it; one past its
   * expiry ends {@code expired}; one cancelled while claimed ends {@code cancelled} (as its
   * completion would). Only the holder of claim {@code attempt} ({@link Claimed#attempt}) may give
   * it back: true for that call; false when the job was reclaimed since, ended, or is unknown.
   */
  CompletionStage<Boolean> release(
      String prefix, String id, int attempt, long nowMillis, long retentionMillis);

  /**
   * {@code pool}'s backlog now (after expiring what is due, as every call does): the jobs waiting,
   * the oldest one's creation time, and the jobs that expired waiting since the last backlog call
   * for the pool, by any replica. Each expiry is handed out once across replicas, so the replicas'
   * counts add up to the pool's.
   */
  CompletionStage<Backlog> backlog(
      String prefix, String pool, long nowMillis, long retentionMillis);

  /**
   * How fast {@code pool}'s queue drained lately, pool-wide: the work units per second that left it
   * while jobs waited, from this store's own answers to enqueues and backlog reads ({@link
   * QueueDrain}); {@code NaN} when there is no such evidence yet (the default: a store that does
   * not measure it).
   */
  default double drainedWorkPerSecond(String prefix, String pool, long nowMillis) {
    return Double.NaN;
  }

  /**
   * A pool's backlog ({@link #backlog}).
   *
   * @param oldestCreatedMillis the oldest waiting job's creation time, or -1 when none waits
   * @param expired jobs expired waiting since the pool's last backlog call (handed out once)
   */
  record Backlog(long waiting, long oldestCreatedMillis, long expired) {}

  /**
   * A claimed job.
   *
   * @param body the request body it was accepted with
   * @param workUnits the work units it was accepted with (whether its pool can start it now)
   * @param attempt how many times it was claimed (1 the first time; a claim given back with {@link
   *     JobStore#release} counts too): the claim's fence for {@link JobStore#release}
   */
  @SuppressWarnings("ArrayRecordComponent") // handed to the upstream as it is
  record Claimed(
      String id,
      String tenant,
      String className,
      String route,
      byte[] body,
      long workUnits,
      int attempt) {}

  /**
   * A job to write.
   *
   * @param body the request body the upstream gets when it runs (owned by the store from here)
   */
  @SuppressWarnings("ArrayRecordComponent") // never compared: the store's copy
  record NewJob(
      String id,
      String tenant,
      String pool,
      String className,
      String route,
      @Nullable String model,
      long workUnits,
      long createdMillis,
      long expiresMillis,
      byte[] body) {}

  /** A tenant's caps on its waiting jobs, and how long a final status stays. */
  record Caps(int maxJobs, long maxWork, long retentionMillis) {}

  /**
   * The store's answer to an enqueue.
   *
   * @param full null when written; else which cap refused it: {@code count} or {@code work}
   * @param position the jobs waiting ahead of it in its pool
   * @param aheadWork the work units waiting ahead of it
   */
  record Enqueued(@Nullable String full, long position, long aheadWork) {
    public boolean accepted() {
      return full == null;
    }
  }

  /**
   * A job as its tenant sees it.
   *
   * @param position jobs ahead of it while it waits (else 0)
   * @param aheadWork work units ahead of it while it waits (else 0)
   * @param result the stored result when completed (else null)
   * @param error the upstream's typed error when failed (else null)
   */
  @SuppressWarnings("ArrayRecordComponent") // read once into the answer
  record JobView(
      String id,
      String pool,
      JobStatus status,
      @Nullable String model,
      long workUnits,
      long createdMillis,
      long expiresMillis,
      long position,
      long aheadWork,
      byte @Nullable [] result,
      @Nullable String error) {}
}
