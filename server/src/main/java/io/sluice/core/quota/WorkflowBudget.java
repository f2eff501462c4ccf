package io.sluice.core.quota;

import java.util.HashMap;
import java.util.Map;

/**
 * Per workflow (an agent run or workflow id, the trusted {@code workflow} signal) and pool: the
 * requests and work units it has admitted or waiting in the queue, against the pool's {@code
 * workflow.maxRequests} / {@code workflow.maxWork} (docs/estimation.md, Fan-out). A request takes
 * its place before the pool decides and gives it back exactly once however it ends (the session
 * guards that, as it does the tenant's slot).
 *
 * <p>Replicas: each replica holds its share of the budget, the pool's numbers times the fraction of
 * the pool this replica is granted ({@code replicas}, the pool's work share; 1 alone or with the
 * store in this process), at least one request. So the replicas together never hold more than the
 * budget, except that a replica with any share lets a workflow have one request (a workflow spread
 * over more replicas than {@code maxRequests} may hold one per replica); a workflow whose requests
 * all reach one replica is refused at that replica's part, below the pool's number. No store round
 * trip: the check is local and exact per replica.
 *
 * <p>Bounds: an entry exists only while its workflow holds something (it leaves with its last
 * request), so the map is bounded by this process's requests in flight and queued; on top of that
 * at most {@link #maxWorkflows} entries: a request of a workflow not yet tracked when the map is
 * full runs without a workflow budget ({@link Check#UNTRACKED}, counted), as the pool's own
 * capacity, queue and tenant caps still bound it.
 *
 * <p>One per process (what is held outlives config reloads). Thread-safe: one monitor, never held
 * while calling out.
 */
public final class WorkflowBudget {
  /** The default bound of tracked workflows (all pools), far above any pool's in-flight + queue. */
  public static final int DEFAULT_MAX_WORKFLOWS = 100_000;

  /** The longest workflow id kept; a longer one is cut to this many characters. */
  public static final int MAX_ID_CHARS = 128;

  private final int maxWorkflows;
  // guarded by this
  private final Map<Key, Held> held = new HashMap<>();
  private final Map<String, Integer> perPool = new HashMap<>();
  private long untracked;

  /**
   * @param maxWorkflows the most workflows tracked at once, all pools ({@code >= 1})
   */
  public WorkflowBudget(int maxWorkflows) {
    if (maxWorkflows < 1) {
      throw new IllegalArgumentException("maxWorkflows: " + maxWorkflows + " (expected: >= 1)");
    }
    this.maxWorkflows = maxWorkflows;
  }

  /** {@code id} as kept: at most {@value #MAX_ID_CHARS} characters. */
  public static String normalize(String id) {
    return id.length() <= MAX_ID_CHARS ? id : id.substring(0, MAX_ID_CHARS);
  }

  /**
   * Takes a place for one request of {@code work} units. When {@link Check#granted()}, the caller
   * owns it and gives it back once with {@link #release}({@code pool, workflow, work}).
   *
   * @param maxRequests the pool's {@code workflow.maxRequests} (0 = no cap)
   * @param maxWork the pool's {@code workflow.maxWork} (0 = no cap)
   * @param share this replica's fraction of the pool, {@code (0, 1]} (1 alone)
   */
  public Check acquire(
      String pool, String workflow, long work, int maxRequests, long maxWork, double share) {
    int requestLimit = maxRequests <= 0 ? 0 : scaled(maxRequests, share);
    long workLimit = maxWork <= 0 ? 0 : Math.max(1, (long) Math.floor(maxWork * clamp(share)));
    Key k = new Key(pool, normalize(workflow));
    long w = Math.max(0, work);
    synchronized (this) {
      Held h = held.get(k);
      if (h == null) {
        if (held.size() >= maxWorkflows) {
          untracked++;
          return Check.UNTRACKED;
        }
        h = new Held();
      }
      if (requestLimit > 0 && h.requests + 1 > requestLimit) {
        return new Check(false, false, h.requests, h.work, requestLimit, workLimit);
      }
      if (workLimit > 0 && h.requests > 0 && h.work + w > workLimit) {
        return new Check(false, false, h.requests, h.work, requestLimit, workLimit);
      }
      if (h.requests == 0) {
        held.put(k, h);
        perPool.merge(pool, 1, Integer::sum);
      }
      h.requests++;
      h.work += w;
      return new Check(true, true, h.requests, h.work, requestLimit, workLimit);
    }
  }

  /** Gives back one place {@link #acquire} granted (a no-op when none is held). */
  public synchronized void release(String pool, String workflow, long work) {
    Key k = new Key(pool, normalize(workflow));
    Held h = held.get(k);
    if (h == null) {
      return;
    }
    h.requests--;
    h.work = Math.max(0, h.work - Math.max(0, work));
    if (h.requests <= 0) {
      held.remove(k);
      perPool.computeIfPresent(pool, (p, n) -> n <= 1 ? null : n - 1);
    }
  }

  /** Workflows holding something in {@code pool} now (a gauge). */
  public synchronized int workflows(String pool) {
    Integer n = perPool.get(pool);
    return n == null ? 0 : n;
  }

  /** Workflows tracked now, all pools. */
  public synchronized int size() {
    return held.size();
  }

  /** Requests of {@code workflow} held in {@code pool}. */
  public synchronized int requests(String pool, String workflow) {
    Held h = held.get(new Key(pool, normalize(workflow)));
    return h == null ? 0 : h.requests;
  }

  /** Work units of {@code workflow} held in {@code pool}. */
  public synchronized long work(String pool, String workflow) {
    Held h = held.get(new Key(pool, normalize(workflow)));
    return h == null ? 0 : h.work;
  }

  /** Requests let through untracked because {@link #maxWorkflows} were tracked (a counter). */
  public synchronized long untracked() {
    return untracked;
  }

  public int maxWorkflows() {
    return maxWorkflows;
  }

  private static int scaled(int limit, double share) {
    return (int) Math.max(1, Math.floor(limit * clamp(share) + 1e-9));
  }

  private static double clamp(double share) {
    return share > 0 && share <= 1 ? share : share > 1 ? 1 : 0;
  }

  /**
   * What {@link #acquire} answers.
   *
   * @param allowed whether the request may go on to the pool
   * @param granted whether it holds a place now (to be released once)
   * @param requests the workflow's requests held on this replica (with this one when granted)
   * @param work the workflow's work units held on this replica (with this one when granted)
   * @param requestLimit this replica's part of {@code maxRequests} (0: no cap)
   * @param workLimit this replica's part of {@code maxWork} (0: no cap)
   */
  public record Check(
      boolean allowed, boolean granted, int requests, long work, int requestLimit, long workLimit) {
    /** The map was full: the request goes on without a workflow budget. */
    public static final Check UNTRACKED = new Check(true, false, 0, 0, 0, 0);
  }

  private record Key(String pool, String workflow) {}

  private static final class Held {
    int requests;
    long work;
  }
}
