package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.intake.JobStatus;
import io.sluice.core.intake.JobStore;
import io.sluice.core.intake.OperationIds;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The contract of {@link JobStore}, run on memory and on Redis (two replicas' connections): arrival
 * order and the work ahead, the tenant's caps, another tenant's id unseen, expiry past the
 * freshness window freeing the caps, cancel while waiting.
 */
public abstract class JobStoreContractTest {
  protected static final long T0 = 1_800_000_000_000L;
  private static final long FRESH = 60_000;
  private static final long KEEP = 3_600_000;

  protected abstract JobStore replicaA();

  protected abstract JobStore replicaB();

  protected abstract String prefix();

  private final JobStore.Caps caps = new JobStore.Caps(3, 1_000, KEEP);

  private JobStore.NewJob job(String tenant, String pool, long work, long at) {
    return new JobStore.NewJob(
        OperationIds.next(),
        tenant,
        pool,
        "batch",
        "responses",
        "m1",
        work,
        at,
        at + FRESH,
        "{\"background\":true}".getBytes(StandardCharsets.UTF_8));
  }

  private JobStore.Enqueued enqueue(JobStore s, JobStore.NewJob j, JobStore.Caps c) {
    return s.enqueue(prefix(), j, c).toCompletableFuture().join();
  }

  private JobStore.JobView read(JobStore s, String tenant, String id, long now) {
    return s.read(prefix(), tenant, id, now, KEEP).toCompletableFuture().join();
  }

  @Test
  void enqueued_inArrivalOrder_withTheWorkAhead_acrossReplicas() {
    JobStore.NewJob a = job("acme", "gpu", 100, T0);
    JobStore.NewJob b = job("acme", "gpu", 50, T0 + 1);
    JobStore.NewJob c = job("beta", "gpu", 10, T0 + 2);
    assertThat(enqueue(replicaA(), a, caps)).isEqualTo(new JobStore.Enqueued(null, 0, 0));
    assertThat(enqueue(replicaB(), b, caps)).isEqualTo(new JobStore.Enqueued(null, 1, 100));
    assertThat(enqueue(replicaA(), c, caps)).isEqualTo(new JobStore.Enqueued(null, 2, 150));

    JobStore.JobView v = read(replicaB(), "beta", c.id(), T0 + 3);
    assertThat(v.status()).isEqualTo(JobStatus.QUEUED);
    assertThat(v.pool()).isEqualTo("gpu");
    assertThat(v.model()).isEqualTo("m1");
    assertThat(v.workUnits()).isEqualTo(10);
    assertThat(v.createdMillis()).isEqualTo(T0 + 2);
    assertThat(v.expiresMillis()).isEqualTo(T0 + 2 + FRESH);
    assertThat(v.position()).isEqualTo(2);
    assertThat(v.aheadWork()).isEqualTo(150);
    assertThat(v.result()).isNull();
    assertThat(v.error()).isNull();
  }

  @Test
  void anotherTenantsId_isUnknown_forReadAndCancel() {
    JobStore.NewJob a = job("acme", "gpu", 100, T0);
    enqueue(replicaA(), a, caps);
    assertThat(read(replicaB(), "beta", a.id(), T0 + 1)).isNull();
    assertThat(
            replicaB().cancel(prefix(), "beta", a.id(), T0 + 1, KEEP).toCompletableFuture().join())
        .isNull();
    assertThat(read(replicaB(), "acme", a.id(), T0 + 1).status()).isEqualTo(JobStatus.QUEUED);
    assertThat(read(replicaB(), "acme", OperationIds.next(), T0 + 1)).isNull();
  }

  @Test
  void tenantCaps_countAndWork_refuseWithoutWriting() {
    for (int i = 0; i < 3; i++) {
      assertThat(enqueue(replicaA(), job("acme", "gpu", 10, T0 + i), caps).accepted()).isTrue();
    }
    JobStore.NewJob fourth = job("acme", "gpu", 10, T0 + 5);
    assertThat(enqueue(replicaB(), fourth, caps).full()).isEqualTo("count");
    assertThat(read(replicaA(), "acme", fourth.id(), T0 + 6)).isNull(); // never written
    // another tenant is not capped by acme's backlog; its own work cap holds
    assertThat(enqueue(replicaB(), job("beta", "gpu", 990, T0), caps).accepted()).isTrue();
    JobStore.NewJob heavy = job("beta", "gpu", 20, T0 + 1);
    assertThat(enqueue(replicaA(), heavy, caps).full()).isEqualTo("work");
    assertThat(read(replicaA(), "beta", heavy.id(), T0 + 2)).isNull();
  }

  @Test
  void pastItsFreshness_aJobExpires_andFreesItsTenantsCaps() {
    JobStore.NewJob a = job("acme", "gpu", 100, T0);
    JobStore.NewJob b = job("acme", "gpu", 100, T0 + 10);
    JobStore.NewJob c = job("acme", "gpu", 100, T0 + 20);
    enqueue(replicaA(), a, caps);
    enqueue(replicaA(), b, caps);
    enqueue(replicaA(), c, caps);
    JobStore.JobView v = read(replicaB(), "acme", a.id(), T0 + FRESH + 15);
    assertThat(v.status()).isEqualTo(JobStatus.EXPIRED);
    assertThat(v.position()).isZero();
    assertThat(read(replicaB(), "acme", b.id(), T0 + FRESH + 15).status())
        .isEqualTo(JobStatus.EXPIRED);
    JobStore.JobView still = read(replicaB(), "acme", c.id(), T0 + FRESH + 15);
    assertThat(still.status()).isEqualTo(JobStatus.QUEUED);
    assertThat(still.position()).isZero(); // the expired ones left the queue
    // two expired: room for two more within the count cap of three
    assertThat(enqueue(replicaA(), job("acme", "gpu", 10, T0 + FRESH + 16), caps).accepted())
        .isTrue();
    assertThat(enqueue(replicaA(), job("acme", "gpu", 10, T0 + FRESH + 17), caps).accepted())
        .isTrue();
    assertThat(enqueue(replicaA(), job("acme", "gpu", 10, T0 + FRESH + 18), caps).full())
        .isEqualTo("count");
  }

  @Test
  void backlog_countsWaiting_agesTheOldest_andHandsOutEachExpiryOnce() {
    JobStore.Backlog empty =
        replicaA().backlog(prefix(), "gpu", T0, KEEP).toCompletableFuture().join();
    assertThat(empty).isEqualTo(new JobStore.Backlog(0, -1, 0));
    enqueue(replicaA(), job("acme", "gpu", 100, T0), caps);
    enqueue(replicaB(), job("beta", "gpu", 10, T0 + 20), caps);
    enqueue(replicaB(), job("beta", "cpu", 10, T0 + 30), caps);
    assertThat(replicaB().backlog(prefix(), "gpu", T0 + 40, KEEP).toCompletableFuture().join())
        .isEqualTo(new JobStore.Backlog(2, T0, 0));
    // the first gpu job expires: the next call sees it once, whichever replica asks
    assertThat(
            replicaA().backlog(prefix(), "gpu", T0 + FRESH + 5, KEEP).toCompletableFuture().join())
        .isEqualTo(new JobStore.Backlog(1, T0 + 20, 1));
    assertThat(
            replicaB().backlog(prefix(), "gpu", T0 + FRESH + 6, KEEP).toCompletableFuture().join())
        .isEqualTo(new JobStore.Backlog(1, T0 + 20, 0));
    // an expiry a read found is handed out by the next backlog call too, per pool
    assertThat(read(replicaA(), "beta", OperationIds.next(), T0 + FRESH + 40)).isNull();
    assertThat(
            replicaA().backlog(prefix(), "cpu", T0 + FRESH + 41, KEEP).toCompletableFuture().join())
        .isEqualTo(new JobStore.Backlog(0, -1, 1));
    assertThat(
            replicaA().backlog(prefix(), "gpu", T0 + FRESH + 41, KEEP).toCompletableFuture().join())
        .isEqualTo(new JobStore.Backlog(0, -1, 1));
  }

  @Test
  void cancelWhileQueued_leavesTheQueue_keepsTheStatus_freesTheCaps() {
    JobStore.NewJob a = job("acme", "gpu", 100, T0);
    JobStore.NewJob b = job("acme", "gpu", 100, T0 + 1);
    JobStore.NewJob c = job("acme", "gpu", 100, T0 + 2);
    enqueue(replicaA(), a, caps);
    enqueue(replicaA(), b, caps);
    enqueue(replicaA(), c, caps);
    JobStore.JobView v =
        replicaB().cancel(prefix(), "acme", a.id(), T0 + 3, KEEP).toCompletableFuture().join();
    assertThat(v.status()).isEqualTo(JobStatus.CANCELLED);
    assertThat(read(replicaA(), "acme", a.id(), T0 + 4).status()).isEqualTo(JobStatus.CANCELLED);
    JobStore.JobView next = read(replicaA(), "acme", b.id(), T0 + 4);
    assertThat(next.position()).isZero();
    assertThat(read(replicaA(), "acme", c.id(), T0 + 4).position()).isEqualTo(1);
    assertThat(enqueue(replicaB(), job("acme", "gpu", 10, T0 + 5), caps).accepted()).isTrue();
    // a second cancel finds it done: unchanged
    assertThat(
            replicaA()
                .cancel(prefix(), "acme", a.id(), T0 + 6, KEEP)
                .toCompletableFuture()
                .join()
                .status())
        .isEqualTo(JobStatus.CANCELLED);
  }

  private JobStore.Claimed claim(JobStore s, String consumer, long now, long lease) {
    return s.claim(prefix(), "gpu", consumer, now, lease, KEEP).toCompletableFuture().join();
  }

  private boolean complete(JobStore s, String id, JobStatus st, String result, long now) {
    return s.complete(
            prefix(),
            id,
            st,
            result == null ? null : result.getBytes(StandardCharsets.UTF_8),
            st == JobStatus.FAILED ? "upstream_overloaded" : null,
            now,
            KEEP)
        .toCompletableFuture()
        .join();
  }

  @Test
  void claim_inArrivalOrder_completeOnce_resultKept_capsFreed() {
    JobStore.NewJob a = job("acme", "gpu", 100, T0);
    JobStore.NewJob b = job("acme", "gpu", 100, T0 + 1);
    enqueue(replicaA(), a, caps);
    enqueue(replicaA(), b, caps);
    JobStore.Claimed first = claim(replicaB(), "replica-b", T0 + 2, 60_000);
    assertThat(first.id()).isEqualTo(a.id());
    assertThat(first.tenant()).isEqualTo("acme");
    assertThat(first.className()).isEqualTo("batch");
    assertThat(first.attempt()).isEqualTo(1);
    assertThat(new String(first.body(), StandardCharsets.UTF_8)).contains("background");
    assertThat(start(replicaA(), a.id())).isTrue(); // its dispatched request was admitted
    assertThat(read(replicaA(), "acme", a.id(), T0 + 3).status()).isEqualTo(JobStatus.IN_PROGRESS);
    assertThat(read(replicaA(), "acme", b.id(), T0 + 3).position()).isZero();
    assertThat(claim(replicaA(), "replica-a", T0 + 3, 60_000).id()).isEqualTo(b.id());
    assertThat(claim(replicaA(), "replica-a", T0 + 3, 60_000)).isNull();

    assertThat(complete(replicaB(), a.id(), JobStatus.COMPLETED, "{\"output\":1}", T0 + 4))
        .isTrue();
    assertThat(complete(replicaA(), a.id(), JobStatus.FAILED, null, T0 + 5)).isFalse(); // once
    JobStore.JobView done = read(replicaA(), "acme", a.id(), T0 + 6);
    assertThat(done.status()).isEqualTo(JobStatus.COMPLETED);
    assertThat(new String(done.result(), StandardCharsets.UTF_8)).isEqualTo("{\"output\":1}");
    assertThat(complete(replicaA(), b.id(), JobStatus.FAILED, null, T0 + 7)).isTrue();
    JobStore.JobView failed = read(replicaA(), "acme", b.id(), T0 + 8);
    assertThat(failed.status()).isEqualTo(JobStatus.FAILED);
    assertThat(failed.error()).isEqualTo("upstream_overloaded");
    for (int i = 0; i < 3; i++) { // both gave their caps back
      assertThat(enqueue(replicaB(), job("acme", "gpu", 10, T0 + 10 + i), caps).accepted())
          .isTrue();
    }
  }

  @Test
  void aDeadReplicasJob_isReclaimedAfterItsLease_andCompletedOnce() {
    JobStore.NewJob a = job("acme", "gpu", 100, T0);
    enqueue(replicaA(), a, caps);
    assertThat(claim(replicaA(), "replica-a", T0 + 1, 1_000).id()).isEqualTo(a.id());
    assertThat(claim(replicaB(), "replica-b", T0 + 500, 1_000)).isNull(); // lease still held
    JobStore.Claimed again = claim(replicaB(), "replica-b", T0 + 1_500, 1_000);
    assertThat(again.id()).isEqualTo(a.id());
    assertThat(again.attempt()).isEqualTo(2);
    assertThat(complete(replicaB(), a.id(), JobStatus.COMPLETED, "r", T0 + 1_600)).isTrue();
    // the first replica comes back late: nothing changes
    assertThat(complete(replicaA(), a.id(), JobStatus.COMPLETED, "late", T0 + 1_700)).isFalse();
    assertThat(
            new String(
                read(replicaA(), "acme", a.id(), T0 + 1_800).result(), StandardCharsets.UTF_8))
        .isEqualTo("r");
    assertThat(claim(replicaB(), "replica-b", T0 + 10_000, 1_000)).isNull();
  }

  @Test
  void cancelled_orExpired_isNeverClaimed_andCancelWhileRunning_dropsTheResult() {
    JobStore.NewJob a = job("acme", "gpu", 100, T0);
    JobStore.NewJob b = job("acme", "gpu", 100, T0 + 1);
    JobStore.NewJob c = job("acme", "gpu", 100, T0 + FRESH);
    enqueue(replicaA(), a, caps);
    enqueue(replicaA(), b, caps);
    replicaA().cancel(prefix(), "acme", a.id(), T0 + 2, KEEP).toCompletableFuture().join();
    enqueue(replicaA(), c, caps);
    // a: cancelled, b: past its freshness at T0 + FRESH + 5: the claim gets c
    JobStore.Claimed got = claim(replicaB(), "replica-b", T0 + FRESH + 5, 60_000);
    assertThat(got.id()).isEqualTo(c.id());
    assertThat(read(replicaA(), "acme", b.id(), T0 + FRESH + 6).status())
        .isEqualTo(JobStatus.EXPIRED);
    JobStore.JobView cancelled =
        replicaA()
            .cancel(prefix(), "acme", c.id(), T0 + FRESH + 7, KEEP)
            .toCompletableFuture()
            .join();
    assertThat(cancelled.status()).isEqualTo(JobStatus.CANCELLED);
    assertThat(complete(replicaB(), c.id(), JobStatus.COMPLETED, "r", T0 + FRESH + 8)).isTrue();
    JobStore.JobView after = read(replicaA(), "acme", c.id(), T0 + FRESH + 9);
    assertThat(after.status()).isEqualTo(JobStatus.CANCELLED);
    assertThat(after.result()).isNull();
    for (int i = 0; i < 3; i++) { // every cap given back
      assertThat(enqueue(replicaB(), job("acme", "gpu", 10, T0 + FRESH + 10 + i), caps).accepted())
          .isTrue();
    }
  }

  private boolean start(JobStore s, String id) {
    return s.start(prefix(), id).toCompletableFuture().join();
  }

  @Test
  void aClaimedJob_readsQueuedUntilStarted_thenInProgress_andAGiveBackNeverShowsInProgress() {
    JobStore.NewJob a = job("acme", "gpu", 100, T0);
    enqueue(replicaA(), a, caps);
    assertThat(start(replicaA(), a.id())).isFalse(); // waiting, not claimed: nothing to start
    JobStore.Claimed c = claim(replicaA(), "replica-a", T0 + 1, 60_000);
    assertThat(c.workUnits()).isEqualTo(100);
    // claimed, its request not admitted yet (it may wait in Sluice's queue): still queued
    JobStore.JobView v = read(replicaB(), "acme", a.id(), T0 + 2);
    assertThat(v.status()).isEqualTo(JobStatus.QUEUED);
    assertThat(v.position()).isZero();
    // turned away and given back: queued throughout
    assertThat(release(replicaA(), a.id(), c.attempt(), T0 + 3)).isTrue();
    assertThat(read(replicaB(), "acme", a.id(), T0 + 3).status()).isEqualTo(JobStatus.QUEUED);
    assertThat(start(replicaB(), a.id())).isFalse(); // given back: not claimed
    // claimed again and admitted: in_progress, once
    JobStore.Claimed c2 = claim(replicaB(), "replica-b", T0 + 4, 60_000);
    assertThat(read(replicaA(), "acme", a.id(), T0 + 5).status()).isEqualTo(JobStatus.QUEUED);
    assertThat(start(replicaA(), a.id())).isTrue();
    assertThat(start(replicaB(), a.id())).isFalse(); // once
    assertThat(read(replicaB(), "acme", a.id(), T0 + 6).status()).isEqualTo(JobStatus.IN_PROGRESS);
    // a reclaim after the lease starts over: queued until its request is admitted again
    JobStore.Claimed c3 = claim(replicaA(), "replica-a", T0 + 4 + 60_000, 60_000);
    assertThat(c3.attempt()).isEqualTo(c2.attempt() + 1);
    assertThat(read(replicaB(), "acme", a.id(), T0 + 5 + 60_000).status())
        .isEqualTo(JobStatus.QUEUED);
    assertThat(complete(replicaA(), a.id(), JobStatus.COMPLETED, "r", T0 + 6 + 60_000)).isTrue();
    assertThat(start(replicaA(), a.id())).isFalse(); // ended
    assertThat(read(replicaB(), "acme", a.id(), T0 + 7 + 60_000).status())
        .isEqualTo(JobStatus.COMPLETED);
  }

  private boolean release(JobStore s, String id, int attempt, long now) {
    return s.release(prefix(), id, attempt, now, KEEP).toCompletableFuture().join();
  }

  @Test
  void aReleasedJob_waitsInItsPlace_andIsClaimedAgainAtOnce_byAnyReplica() {
    JobStore.NewJob a = job("acme", "gpu", 100, T0);
    JobStore.NewJob b = job("acme", "gpu", 50, T0 + 1);
    enqueue(replicaA(), a, caps);
    enqueue(replicaA(), b, caps);
    JobStore.Claimed first = claim(replicaA(), "replica-a", T0 + 2, 60_000);
    assertThat(first.id()).isEqualTo(a.id());
    assertThat(release(replicaA(), a.id(), first.attempt(), T0 + 3)).isTrue();
    JobStore.JobView back = read(replicaB(), "acme", a.id(), T0 + 4);
    assertThat(back.status()).isEqualTo(JobStatus.QUEUED);
    assertThat(back.position()).isZero(); // ahead of b, as it arrived
    assertThat(read(replicaB(), "acme", b.id(), T0 + 4).aheadWork()).isEqualTo(100);
    // another replica, long before the 60 s lease: a first, then b
    JobStore.Claimed again = claim(replicaB(), "replica-b", T0 + 5, 60_000);
    assertThat(again.id()).isEqualTo(a.id());
    assertThat(again.attempt()).isEqualTo(2);
    assertThat(claim(replicaB(), "replica-b", T0 + 6, 60_000).id()).isEqualTo(b.id());
    // the first claim's holder is fenced off: given back twice, or after the reclaim, nothing
    assertThat(release(replicaA(), a.id(), first.attempt(), T0 + 7)).isFalse();
    assertThat(start(replicaB(), a.id())).isTrue();
    assertThat(read(replicaA(), "acme", a.id(), T0 + 7).status()).isEqualTo(JobStatus.IN_PROGRESS);
    assertThat(complete(replicaB(), a.id(), JobStatus.COMPLETED, "r", T0 + 8)).isTrue();
    assertThat(release(replicaB(), a.id(), again.attempt(), T0 + 9)).isFalse(); // ended
    assertThat(release(replicaB(), "unknown-id", 1, T0 + 9)).isFalse();
    assertThat(claim(replicaA(), "replica-a", T0 + 10, 60_000)).isNull();
  }

  @Test
  void aReleasedJob_behindMoreThan16Claims_isClaimedNext_notAfterItsLease() {
    JobStore.Caps many = new JobStore.Caps(100, 100_000, KEEP);
    List<JobStore.NewJob> jobs = new java.util.ArrayList<>();
    for (int i = 0; i < 20; i++) {
      JobStore.NewJob j = job("acme", "gpu", 10, T0 + i);
      jobs.add(j);
      enqueue(replicaA(), j, many);
    }
    JobStore.Claimed last = null;
    for (int i = 0; i < 18; i++) { // 18 claims in progress, none past its lease
      last = claim(replicaA(), "replica-a", T0 + 100 + i, 60_000);
      assertThat(last.id()).isEqualTo(jobs.get(i).id());
    }
    assertThat(release(replicaA(), last.id(), last.attempt(), T0 + 200)).isTrue();
    // the 18th, given back behind 17 claims still running, is claimed at once, before the 19th
    JobStore.Claimed again = claim(replicaB(), "replica-b", T0 + 201, 60_000);
    assertThat(again.id()).isEqualTo(jobs.get(17).id());
    assertThat(again.attempt()).isEqualTo(2);
    assertThat(claim(replicaB(), "replica-b", T0 + 202, 60_000).id()).isEqualTo(jobs.get(18).id());
    // a completed claim is never found again by the lease scan
    assertThat(complete(replicaB(), again.id(), JobStatus.COMPLETED, "r", T0 + 203)).isTrue();
    JobStore.Claimed late = claim(replicaA(), "replica-a", T0 + 100 + 60_001, 60_000);
    assertThat(late.id()).isEqualTo(jobs.get(0).id()); // the oldest lapsed claim first
    assertThat(late.attempt()).isEqualTo(2);
  }

  @Test
  void aReleasedJob_keepsItsCaps_expiresPastItsFreshness_andEndsIfCancelledMeanwhile() {
    JobStore.Caps one = new JobStore.Caps(1, 1_000, KEEP);
    JobStore.NewJob a = job("acme", "gpu", 100, T0);
    enqueue(replicaA(), a, one);
    JobStore.Claimed c = claim(replicaA(), "replica-a", T0 + 1, 60_000);
    assertThat(release(replicaA(), a.id(), c.attempt(), T0 + 2)).isTrue();
    assertThat(enqueue(replicaB(), job("acme", "gpu", 1, T0 + 3), one).full())
        .isEqualTo("count"); // still counted while it waits again
    // claimed again, cancelled while claimed, then given back: it ends cancelled, caps freed
    JobStore.Claimed c2 = claim(replicaB(), "replica-b", T0 + 4, 60_000);
    replicaA().cancel(prefix(), "acme", a.id(), T0 + 5, KEEP).toCompletableFuture().join();
    assertThat(release(replicaB(), a.id(), c2.attempt(), T0 + 6)).isTrue();
    assertThat(read(replicaA(), "acme", a.id(), T0 + 7).status()).isEqualTo(JobStatus.CANCELLED);
    assertThat(claim(replicaA(), "replica-a", T0 + 8, 60_000)).isNull();
    // given back past its freshness: expired, never claimed, caps freed
    JobStore.NewJob b = job("acme", "gpu", 100, T0 + 10);
    assertThat(enqueue(replicaA(), b, one).accepted()).isTrue();
    JobStore.Claimed cb = claim(replicaA(), "replica-a", T0 + 11, 60_000);
    assertThat(release(replicaA(), b.id(), cb.attempt(), T0 + 10 + FRESH)).isTrue();
    assertThat(read(replicaB(), "acme", b.id(), T0 + 11 + FRESH).status())
        .isEqualTo(JobStatus.EXPIRED);
    assertThat(claim(replicaB(), "replica-b", T0 + 12 + FRESH, 60_000)).isNull();
    assertThat(enqueue(replicaB(), job("acme", "gpu", 1, T0 + 13 + FRESH), one).accepted())
        .isTrue();
  }

  /**
   * The drain a replica measures is the pool's, whoever claimed: replica A enqueues two jobs (100
   * and 50 units); replica B claims the first a second later; A's backlog read 4 s after its
   * enqueue sees 100 units gone: 25 a second. Before a span of evidence, no drain shown (0).
   */
  @Test
  void drainedWork_measuredFromTheAnswers_isThePoolsWhoeverClaimed() {
    enqueue(replicaA(), job("acme", "gpu", 100, T0), caps);
    enqueue(replicaA(), job("acme", "gpu", 50, T0 + 1), caps);
    assertThat(replicaA().drainedWorkPerSecond(prefix(), "gpu", T0 + 1)).isZero(); // none shown
    assertThat(claim(replicaB(), "replica-b", T0 + 1_000, 60_000)).isNotNull();
    JobStore.Backlog b =
        replicaA().backlog(prefix(), "gpu", T0 + 4_000, KEEP).toCompletableFuture().join();
    assertThat(b.waiting()).isEqualTo(1);
    assertThat(replicaA().drainedWorkPerSecond(prefix(), "gpu", T0 + 4_000)).isEqualTo(25.0);
  }
}
