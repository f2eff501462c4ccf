package io.sluice.core.permit;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import io.sluice.core.admission.Waiter;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.time.Ticker;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Permits for a stage Envoy does not front (docs/permits.md): an {@link #acquire} is one request of
 * the pool's own decision ({@link AdmissionController#decide}: the pool's capacity, its replica
 * share, its class queues and the tier's per-replica caps), held as a <em>lease</em>: the permit
 * comes back to the pool {@code leaseTtl} after the last acquire or {@link #renew} unless {@link
 * #release}d first, so a crashed caller's permit returns ({@link #expireDue}, from a timer, on the
 * injected ticker). Every permit is given back exactly once: release, lease expiry, a queued wait
 * given up, or {@link #close}.
 *
 * <p>Bounds: at most {@code maxLeases} leases held or waiting (over it an acquire is answered
 * {@link Answer.Kind#TOO_MANY}); ids are at most {@value #MAX_ID_CHARS} characters; the
 * operation-id index lives and dies with the leases. Thread-safe: one monitor, never held while
 * calling the pool or an answer.
 */
public final class PermitDesk implements AutoCloseable {
  /** The longest tenant, pool, class, operation or permit id accepted. */
  public static final int MAX_ID_CHARS = 128;

  private final AdmissionController controller;
  private final Function<String, Tenant> tenants;
  private final Ticker ticker;
  private final long leaseNanos;
  private final int maxLeases;
  private final String prefix =
      Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL) + "-";
  private final AtomicLong ids = new AtomicLong();
  // guarded by this
  private final LinkedHashMap<String, Lease> leases = new LinkedHashMap<>();
  private final Map<String, String> byOperation = new HashMap<>();
  private int waiting;
  private boolean closed;
  private final Counts counts = new Counts();

  /**
   * @param tenants a tenant id's tenant (its tier); "" is the anonymous tenant
   * @param leaseNanos how long a permit outlives its last acquire or renew ({@code > 0})
   * @param maxLeases the most permits held or waiting at once ({@code >= 1})
   */
  public PermitDesk(
      AdmissionController controller,
      Function<String, Tenant> tenants,
      Ticker ticker,
      long leaseNanos,
      int maxLeases) {
    if (leaseNanos <= 0 || maxLeases < 1) {
      throw new IllegalArgumentException(
          "leaseNanos " + leaseNanos + ", maxLeases " + maxLeases + " (expected: > 0, >= 1)");
    }
    this.controller = controller;
    this.tenants = tenants;
    this.ticker = ticker;
    this.leaseNanos = leaseNanos;
    this.maxLeases = maxLeases;
  }

  /** What an acquire asks for. */
  public record Request(
      String pool, String tenant, String className, long work, long maxWaitNanos, String opId) {}

  /** The answer of an acquire, renew or release. */
  public record Answer(
      Kind kind,
      String permitId,
      long leaseNanos,
      String reason,
      long retryAfterSeconds,
      String message,
      long waitedNanos) {
    /** What happened. */
    public enum Kind {
      GRANTED,
      QUEUED_THEN_GRANTED,
      REFUSED,
      /** Bad input: the message names the field and what is expected. */
      INVALID,
      /** An unknown pool, class or permit id. */
      NOT_FOUND,
      /** {@code maxLeases} held or waiting. */
      TOO_MANY
    }

    static Answer of(Kind k, String message) {
      return new Answer(k, "", 0, "", 0, message, 0);
    }
  }

  /** Where an acquire's answer goes: called exactly once, maybe on another thread, later. */
  public interface Reply {
    void answer(Answer a);
  }

  /** A held permit and its lease. */
  private static final class Lease {
    final Permit permit;
    final String opId;
    long expiresAt;

    Lease(Permit permit, String opId, long expiresAt) {
      this.permit = permit;
      this.opId = opId;
      this.expiresAt = expiresAt;
    }
  }

  /**
   * Asks the pool for a permit; {@code reply} is answered once, at once or when a queued permit
   * starts or its wait ends. The returned handle gives up a queued place (a cancelled call).
   */
  public Cancel acquire(Request a, Reply reply) {
    String bad = invalid(a);
    if (bad != null) {
      reply.answer(Answer.of(Answer.Kind.INVALID, bad));
      return Cancel.NONE;
    }
    PoolState pool = controller.pool(a.pool());
    ClassPolicy cls = null;
    for (ClassPolicy c : controller.classes()) {
      if (c.name().equals(a.className())) {
        cls = c;
      }
    }
    if (pool == null || cls == null) {
      reply.answer(
          Answer.of(
              Answer.Kind.NOT_FOUND,
              pool == null
                  ? "pool: " + a.pool() + " is not configured"
                  : "class: " + a.className() + " is not configured"));
      return Cancel.NONE;
    }
    long now = ticker.nanos();
    synchronized (this) {
      if (!a.opId().isEmpty()) {
        String held = byOperation.get(a.opId());
        Lease l = held == null ? null : leases.get(held);
        if (held != null && l != null) {
          l.expiresAt = now + leaseNanos;
          reply.answer(new Answer(Answer.Kind.GRANTED, held, leaseNanos, "", 0, "", 0));
          return Cancel.NONE;
        }
      }
      if (closed || leases.size() + waiting >= maxLeases) {
        counts.refused++;
        reply.answer(
            Answer.of(
                Answer.Kind.TOO_MANY,
                closed ? "shutting down" : "permits: " + maxLeases + " held or waiting"));
        return Cancel.NONE;
      }
      waiting++;
    }
    Tenant tenant = tenants.apply(a.tenant());
    AdmissionRequest req =
        new AdmissionRequest(
            pool.policy(), cls, tenant, a.work(), now, now + cls.deadline().toNanos(), -1, -1);
    QueuedWaiter w = new QueuedWaiter(a, reply);
    Decision d =
        a.maxWaitNanos() > 0
            ? controller.decide(req, Ask.hold(a.maxWaitNanos(), w, now))
            : controller.decide(req, Ask.now(now));
    if (d instanceof Decision.Admit ad) {
      granted(a, ad.permit(), reply, Answer.Kind.GRANTED, 0);
      return Cancel.NONE;
    }
    if (d instanceof Decision.Queued q) {
      synchronized (this) {
        counts.queued++;
      }
      return () -> {
        if (controller.cancel(q.pool(), q.ticket(), ticker.nanos())) {
          w.cancelled();
        } else {
          w.gone = true; // admitted meanwhile: the waiter releases it
        }
      };
    }
    Decision.Reject r =
        d instanceof Decision.Reject rj
            ? rj
            : new Decision.Reject(
                io.sluice.core.admission.Reason.POOL_SATURATED,
                503,
                1,
                "not admitted",
                Decision.Reject.UNPREDICTED);
    refused(r, reply, 0);
    return Cancel.NONE;
  }

  private void granted(Request a, Permit p, Reply reply, Answer.Kind kind, long waited) {
    String id = prefix + ids.incrementAndGet();
    synchronized (this) {
      waiting--;
      if (closed) {
        p.release(Outcome.SHUTDOWN, ticker.nanos());
        reply.answer(Answer.of(Answer.Kind.TOO_MANY, "shutting down"));
        return;
      }
      leases.put(id, new Lease(p, a.opId(), ticker.nanos() + leaseNanos));
      if (!a.opId().isEmpty()) {
        byOperation.put(a.opId(), id);
      }
      counts.granted++;
    }
    reply.answer(new Answer(kind, id, leaseNanos, "", 0, "", waited));
  }

  private void refused(Decision.Reject r, Reply reply, long waited) {
    synchronized (this) {
      waiting--;
      counts.refused++;
    }
    reply.answer(
        new Answer(
            Answer.Kind.REFUSED,
            "",
            0,
            r.reason().code(),
            Math.max(1, r.retryAfterSeconds()),
            r.message(),
            waited));
  }

  /** Extends the lease of {@code permitId}: NOT_FOUND when unknown, released or expired. */
  public Answer renew(String permitId) {
    synchronized (this) {
      Lease l = permitId.length() > MAX_ID_CHARS ? null : leases.get(permitId);
      if (l == null) {
        return Answer.of(Answer.Kind.NOT_FOUND, "permit: unknown, released or expired");
      }
      l.expiresAt = ticker.nanos() + leaseNanos;
      return new Answer(Answer.Kind.GRANTED, permitId, leaseNanos, "", 0, "", 0);
    }
  }

  /**
   * Gives {@code permitId} back (its {@code actualWork}, when more than acquired, is counted
   * first): GRANTED when this call released it, NOT_FOUND when it was not held.
   */
  public Answer release(String permitId, long actualWork) {
    if (actualWork < 0) {
      return Answer.of(Answer.Kind.INVALID, "actual_work: " + actualWork + " (expected: >= 0)");
    }
    Lease l;
    synchronized (this) {
      l = permitId.length() > MAX_ID_CHARS ? null : leases.remove(permitId);
      if (l != null && !l.opId.isEmpty()) {
        byOperation.remove(l.opId, permitId);
      }
    }
    if (l == null) {
      return Answer.of(Answer.Kind.NOT_FOUND, "permit: unknown, released or expired");
    }
    if (actualWork > l.permit.workUnits()) {
      l.permit.grow(actualWork - l.permit.workUnits());
    }
    l.permit.release(Outcome.COMPLETED, ticker.nanos());
    synchronized (this) {
      counts.released++;
    }
    return new Answer(Answer.Kind.GRANTED, permitId, 0, "", 0, "", 0);
  }

  /** Gives back every permit whose lease ran out (a timer calls it); returns how many. */
  public int expireDue() {
    long now = ticker.nanos();
    java.util.List<Permit> due = new java.util.ArrayList<>();
    synchronized (this) {
      for (Iterator<Map.Entry<String, Lease>> it = leases.entrySet().iterator(); it.hasNext(); ) {
        Map.Entry<String, Lease> e = it.next();
        if (e.getValue().expiresAt - now <= 0) {
          it.remove();
          byOperation.remove(e.getValue().opId, e.getKey());
          due.add(e.getValue().permit);
        }
      }
      counts.expired += due.size();
    }
    due.forEach(p -> p.release(Outcome.CANCELLED, now));
    return due.size();
  }

  /** Permits held now (the live leases gauge). */
  public synchronized int leases() {
    return leases.size();
  }

  /** Counters: granted, queued, refused, expired, released. */
  public synchronized long[] counts() {
    return new long[] {
      counts.granted, counts.queued, counts.refused, counts.expired, counts.released
    };
  }

  /** Shutdown: every permit held is given back; later acquires are refused. */
  @Override
  public void close() {
    java.util.List<Permit> all;
    synchronized (this) {
      closed = true;
      all = new java.util.ArrayList<>();
      leases.values().forEach(l -> all.add(l.permit));
      leases.clear();
      byOperation.clear();
    }
    long now = ticker.nanos();
    all.forEach(p -> p.release(Outcome.SHUTDOWN, now));
  }

  private static @Nullable String invalid(Request a) {
    if (a.pool().isEmpty() || a.pool().length() > MAX_ID_CHARS) {
      return "pool: " + len(a.pool()) + " (expected: 1.." + MAX_ID_CHARS + " characters)";
    }
    if (a.className().isEmpty() || a.className().length() > MAX_ID_CHARS) {
      return "class_name: " + len(a.className()) + " (expected: 1.." + MAX_ID_CHARS + ")";
    }
    if (a.tenant().length() > MAX_ID_CHARS || a.opId().length() > MAX_ID_CHARS) {
      return "tenant/operation_id: longer than " + MAX_ID_CHARS + " characters";
    }
    if (a.work() <= 0 || a.work() > (1L << 40)) {
      return "work: " + a.work() + " (expected: 1..1099511627776)";
    }
    if (a.maxWaitNanos() < 0) {
      return "max_wait_ms: negative (expected: >= 0)";
    }
    return null;
  }

  private static String len(String s) {
    return s.isEmpty() ? "empty" : s.length() + " characters";
  }

  /** Gives up a queued place (no-op when nothing waits). */
  public interface Cancel {
    Cancel NONE = () -> {};

    void cancel();
  }

  private final class QueuedWaiter implements Waiter {
    private final Request ask;
    private final Reply reply;
    volatile boolean gone;

    QueuedWaiter(Request ask, Reply reply) {
      this.ask = ask;
      this.reply = reply;
    }

    @Override
    public void admitted(Permit permit, long waitedNanos) {
      if (gone) {
        permit.release(Outcome.CANCELLED, ticker.nanos());
        synchronized (PermitDesk.this) {
          waiting--;
        }
        return;
      }
      granted(ask, permit, reply, Answer.Kind.QUEUED_THEN_GRANTED, waitedNanos);
    }

    @Override
    public void refused(Decision.Reject rejection, long waitedNanos) {
      PermitDesk.this.refused(rejection, reply, waitedNanos);
    }

    void cancelled() {
      gone = true;
      synchronized (PermitDesk.this) {
        waiting--;
      }
    }
  }

  private static final class Counts {
    long granted;
    long queued;
    long refused;
    long expired;
    long released;
  }
}
