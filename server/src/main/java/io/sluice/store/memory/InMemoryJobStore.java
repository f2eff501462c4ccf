package io.sluice.store.memory;

import io.sluice.core.intake.JobStatus;
import io.sluice.core.intake.JobStore;
import io.sluice.core.intake.QueueDrain;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * {@link JobStore} in this process (one replica, tests): the jobs by id, each pool's waiting jobs
 * in arrival order, each tenant's counts, under one lock. Bounded by {@code maxJobs}: the oldest
 * done job goes first; when every kept job still waits, an enqueue is refused ({@code store}).
 */
public final class InMemoryJobStore implements JobStore {
  /** {@link Enqueued#full()} when the store itself holds {@code maxJobs} waiting jobs. */
  public static final String FULL_STORE = "store";

  private static final int SWEEP = 16; // expired jobs made final per call, at most

  private final Map<String, Job> jobs = new LinkedHashMap<>(); // by prefix + id, oldest first
  private final Map<String, TreeMap<Long, Job>> queues = new HashMap<>(); // prefix + pool
  private final Map<String, long[]> tenants = new HashMap<>(); // prefix + tenant: count, work
  private final TreeMap<Long, Job> byExpiry = new TreeMap<>(); // waiting jobs, by expiry then seq
  private final Map<String, Long> expired = new HashMap<>(); // prefix + pool: not yet handed out
  private final Map<String, long[]> enqueuedWork = new HashMap<>(); // prefix + pool: ever
  private final QueueDrain drain = new QueueDrain();
  private long seq;
  private int maxJobs;

  public InMemoryJobStore(int maxJobs) {
    this.maxJobs = Math.max(1, maxJobs);
  }

  /** The policy's bound ({@code intake.maxJobs}). */
  public synchronized void resize(int maxJobs) {
    this.maxJobs = Math.max(1, maxJobs);
  }

  private static final class Job {
    final String prefix;
    NewJob job; // its body dropped once done
    final long seq;
    final long expiryKey;
    JobStatus status = JobStatus.QUEUED;
    long keepUntil = Long.MAX_VALUE;
    boolean held = true; // counted in its tenant's caps while it waits or runs
    int attempts;
    long claimedAt; // while in progress
    boolean started; // its dispatched request was admitted (else a claimed job reads queued)
    byte @Nullable [] result;
    @Nullable String error;

    Job(String prefix, NewJob job, long seq) {
      this.prefix = prefix;
      this.job = job;
      this.seq = seq;
      // expiry millis in the high bits, the sequence below: unique, ordered by expiry
      this.expiryKey = (job.expiresMillis() << 20) | (seq & 0xFFFFF);
    }
  }

  @Override
  public synchronized CompletionStage<Enqueued> enqueue(String prefix, NewJob job, Caps caps) {
    sweep(job.createdMillis(), caps.retentionMillis());
    long[] t = tenants.computeIfAbsent(prefix + job.tenant(), k -> new long[2]);
    if (t[0] + 1 > caps.maxJobs()) {
      return done(new Enqueued("count", 0, 0));
    }
    if (t[1] + job.workUnits() > caps.maxWork()) {
      return done(new Enqueued("work", 0, 0));
    }
    if (jobs.size() >= maxJobs && !evictDone()) {
      return done(new Enqueued(FULL_STORE, 0, 0));
    }
    Job j = new Job(prefix, job, ++seq);
    TreeMap<Long, Job> q = queues.computeIfAbsent(prefix + job.pool(), k -> new TreeMap<>());
    long ahead = 0;
    for (Job w : q.values()) {
      ahead += w.job.workUnits();
    }
    long position = q.size();
    long[] cum = enqueuedWork.computeIfAbsent(prefix + job.pool(), k -> new long[1]);
    drain.record(prefix + job.pool(), job.createdMillis(), cum[0] - ahead, true);
    cum[0] += job.workUnits();
    q.put(j.seq, j);
    byExpiry.put(j.expiryKey, j);
    jobs.put(prefix + job.id(), j);
    t[0]++;
    t[1] += job.workUnits();
    return done(new Enqueued(null, position, ahead));
  }

  @Override
  public synchronized CompletionStage<@Nullable JobView> read(
      String prefix, String tenant, String id, long nowMillis, long retentionMillis) {
    sweep(nowMillis, retentionMillis);
    Job j = visible(prefix, tenant, id, nowMillis);
    return viewed(j == null ? null : view(j));
  }

  @Override
  public synchronized CompletionStage<@Nullable JobView> cancel(
      String prefix, String tenant, String id, long nowMillis, long retentionMillis) {
    sweep(nowMillis, retentionMillis);
    Job j = visible(prefix, tenant, id, nowMillis);
    if (j == null) {
      return viewed(null);
    }
    if (j.status == JobStatus.QUEUED) {
      finish(j, JobStatus.CANCELLED, nowMillis, retentionMillis);
    } else if (j.status == JobStatus.IN_PROGRESS) {
      j.status = JobStatus.CANCELLED; // its replica's completion drops the result
    }
    return viewed(view(j));
  }

  /** The job if it exists, is kept and is {@code tenant}'s; else null. */
  private @Nullable Job visible(String prefix, String tenant, String id, long nowMillis) {
    Job j = jobs.get(prefix + id);
    if (j == null || !j.job.tenant().equals(tenant)) {
      return null;
    }
    if (j.keepUntil <= nowMillis) {
      jobs.remove(prefix + id);
      return null;
    }
    return j;
  }

  /** A waiting job ends ({@code status}): out of its queue, its tenant's counts lowered. */
  private void finish(Job j, JobStatus status, long nowMillis, long retentionMillis) {
    j.status = status;
    j.job = withoutBody(j.job);
    j.keepUntil = nowMillis + retentionMillis;
    TreeMap<Long, Job> q = queues.get(j.prefix + j.job.pool());
    if (q != null) {
      q.remove(j.seq);
      if (q.isEmpty()) {
        queues.remove(j.prefix + j.job.pool());
      }
    }
    byExpiry.remove(j.expiryKey);
    release(j);
    if (status == JobStatus.EXPIRED) {
      expired.merge(j.prefix + j.job.pool(), 1L, Long::sum);
    }
  }

  /** Its tenant's counts give the job back, once. */
  private void release(Job j) {
    if (!j.held) {
      return;
    }
    j.held = false;
    long[] t = tenants.get(j.prefix + j.job.tenant());
    if (t != null) {
      t[0]--;
      t[1] -= j.job.workUnits();
      if (t[0] <= 0) {
        tenants.remove(j.prefix + j.job.tenant());
      }
    }
  }

  @Override
  public synchronized CompletionStage<@Nullable Claimed> claim(
      String prefix,
      String pool,
      String consumer,
      long nowMillis,
      long leaseMillis,
      long retentionMillis) {
    sweep(nowMillis, retentionMillis);
    Job found = null;
    for (Job j : jobs.values()) { // a dead replica's claim first
      if (j.prefix.equals(prefix)
          && j.job.pool().equals(pool)
          && (j.status == JobStatus.IN_PROGRESS || (j.status == JobStatus.CANCELLED && j.held))
          && nowMillis - j.claimedAt >= leaseMillis) {
        if (j.status == JobStatus.CANCELLED) {
          release(j); // cancelled while its replica ran it, and that replica died
          continue;
        }
        found = j;
        break;
      }
    }
    if (found == null) {
      TreeMap<Long, Job> q = queues.get(prefix + pool);
      if (q == null || q.isEmpty()) {
        return claimed(null);
      }
      found = q.firstEntry().getValue();
      q.remove(found.seq);
      if (q.isEmpty()) {
        queues.remove(prefix + pool);
      }
      byExpiry.remove(found.expiryKey);
    }
    found.status = JobStatus.IN_PROGRESS;
    found.started = false;
    found.claimedAt = nowMillis;
    found.attempts++;
    NewJob n = found.job;
    return claimed(
        new Claimed(
            n.id(), n.tenant(), n.className(), n.route(), n.body(), n.workUnits(), found.attempts));
  }

  @Override
  public synchronized CompletionStage<Boolean> complete(
      String prefix,
      String id,
      JobStatus status,
      byte @Nullable [] result,
      @Nullable String error,
      long nowMillis,
      long retentionMillis) {
    Job j = jobs.get(prefix + id);
    if (j == null
        || (j.status != JobStatus.IN_PROGRESS && j.status != JobStatus.CANCELLED)
        || !j.held) {
      return done(false);
    }
    release(j);
    if (j.status == JobStatus.IN_PROGRESS) {
      j.status = status;
      j.result = result;
      j.error = error;
    }
    j.job = withoutBody(j.job);
    j.keepUntil = nowMillis + retentionMillis;
    return done(true);
  }

  @Override
  public synchronized CompletionStage<Boolean> start(String prefix, String id) {
    Job j = jobs.get(prefix + id);
    if (j == null || j.status != JobStatus.IN_PROGRESS || j.started) {
      return done(false);
    }
    j.started = true;
    return done(true);
  }

  @Override
  public synchronized CompletionStage<Boolean> release(
      String prefix, String id, int attempt, long nowMillis, long retentionMillis) {
    Job j = jobs.get(prefix + id);
    if (j == null || !j.held || j.attempts != attempt) {
      return done(false);
    }
    if (j.status == JobStatus.CANCELLED) { // cancelled while claimed: ends as its completion would
      release(j);
      j.job = withoutBody(j.job);
      j.keepUntil = nowMillis + retentionMillis;
      return done(true);
    }
    if (j.status != JobStatus.IN_PROGRESS) {
      return done(false);
    }
    j.status = JobStatus.QUEUED;
    j.started = false;
    j.claimedAt = 0;
    queues.computeIfAbsent(prefix + j.job.pool(), k -> new TreeMap<>()).put(j.seq, j);
    byExpiry.put(j.expiryKey, j);
    if (j.job.expiresMillis() <= nowMillis) {
      finish(j, JobStatus.EXPIRED, nowMillis, retentionMillis);
    }
    return done(true);
  }

  @Override
  public synchronized CompletionStage<Backlog> backlog(
      String prefix, String pool, long nowMillis, long retentionMillis) {
    sweep(nowMillis, retentionMillis);
    TreeMap<Long, Job> q = queues.get(prefix + pool);
    Long gone = expired.remove(prefix + pool);
    long n = gone == null ? 0 : gone;
    long waiting = 0;
    for (Job w : q == null ? List.<Job>of() : q.values()) {
      waiting += w.job.workUnits();
    }
    long[] cum = enqueuedWork.get(prefix + pool);
    drain.record(prefix + pool, nowMillis, (cum == null ? 0 : cum[0]) - waiting, waiting > 0);
    if (q == null || q.isEmpty()) {
      return done(new Backlog(0, -1, n));
    }
    return done(new Backlog(q.size(), q.firstEntry().getValue().job.createdMillis(), n));
  }

  @Override
  public synchronized double drainedWorkPerSecond(String prefix, String pool, long nowMillis) {
    return drain.workPerSecond(prefix + pool, nowMillis);
  }

  private static CompletionStage<@Nullable Claimed> claimed(@Nullable Claimed c) {
    return CompletableFuture.completedFuture(c);
  }

  /** Up to {@link #SWEEP} waiting jobs past their expiry become {@code expired}. */
  private void sweep(long nowMillis, long retentionMillis) {
    for (int i = 0; i < SWEEP && !byExpiry.isEmpty(); i++) {
      Job j = byExpiry.firstEntry().getValue();
      if (j.job.expiresMillis() > nowMillis) {
        return;
      }
      finish(j, JobStatus.EXPIRED, nowMillis, retentionMillis);
    }
  }

  /** Drops the oldest done job to make room; false when every job kept still waits or runs. */
  private boolean evictDone() {
    for (Iterator<Job> it = jobs.values().iterator(); it.hasNext(); ) {
      if (it.next().status.done()) {
        it.remove();
        return true;
      }
    }
    return false;
  }

  private static NewJob withoutBody(NewJob n) {
    return new NewJob(
        n.id(),
        n.tenant(),
        n.pool(),
        n.className(),
        n.route(),
        n.model(),
        n.workUnits(),
        n.createdMillis(),
        n.expiresMillis(),
        new byte[0]);
  }

  private JobView view(Job j) {
    long position = 0;
    long ahead = 0;
    if (j.status == JobStatus.QUEUED) {
      TreeMap<Long, Job> q = queues.get(j.prefix + j.job.pool());
      if (q != null) {
        for (Job w : q.headMap(j.seq, false).values()) {
          position++;
          ahead += w.job.workUnits();
        }
      }
    }
    NewJob n = j.job;
    return new JobView(
        n.id(),
        n.pool(),
        j.status == JobStatus.IN_PROGRESS && !j.started ? JobStatus.QUEUED : j.status,
        n.model(),
        n.workUnits(),
        n.createdMillis(),
        n.expiresMillis(),
        position,
        ahead,
        j.result,
        j.error);
  }

  private static <T> CompletionStage<T> done(T v) {
    return CompletableFuture.completedFuture(v);
  }

  private static CompletionStage<@Nullable JobView> viewed(@Nullable JobView v) {
    return CompletableFuture.completedFuture(v);
  }
}
