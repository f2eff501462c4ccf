package io.sluice.core.permit;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.session.CheckChain;
import io.sluice.core.session.DetachedChecks;
import io.sluice.core.session.Signals;
import io.sluice.core.session.Subject;
import io.sluice.core.time.Ticker;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Permits for a stage Envoy does not front (docs/permits.md): an {@link #acquire} is first run
 * through the snapshot's pre-decision checks ({@link DetachedChecks}: tenant rate, token budget,
 * tenant slot, workflow place, the features' checks), then is one request of the pool's own
 * decision ({@link AdmissionController#decide}: capacity, replica share, class queues, the tier's
 * per-replica caps), held as a <em>lease</em> recorded in the shared store ({@link PermitLeases}):
 * {@link #renew} and {@link #release} work at any replica, a release is answered true exactly once,
 * and a lease not renewed within {@code leaseTtl} ends. This replica holds the pool's place and the
 * checks' holds of the permits it granted ({@link PermitBook}) and gives them back when the store
 * says the lease is no longer live ({@link #expireDue}, from a timer; a release here gives them
 * back at once). Every permit is given back exactly once: release, lease expiry, a release at
 * another replica, a queued wait given up, or {@link #close}.
 *
 * <p>Bounds: at most {@code maxLeases} leases held or waiting at this replica, and live in the
 * store per pool (over either an acquire is answered {@link Answer.Kind#TOO_MANY}); ids are at most
 * {@value #MAX_ID_CHARS} characters (a permit id {@value #MAX_PERMIT_ID_CHARS}). Thread-safe.
 */
public final class PermitDesk implements AutoCloseable {
  /** The longest tenant, pool, class or operation id accepted. */
  public static final int MAX_ID_CHARS = 128;

  /** The longest permit id ({@code <pool>/<replica>-<n>}). */
  public static final int MAX_PERMIT_ID_CHARS = MAX_ID_CHARS + 48;

  private final AdmissionController controller;
  private final Function<String, Tenant> tenants;
  private final Ticker ticker;
  private final long leaseNanos;
  private final int maxLeases;
  private final Shared shared;
  private final String prefix =
      Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL) + "-";
  private final AtomicLong ids = new AtomicLong();
  private final PermitBook book = new PermitBook();
  private final PermitCounts counts = new PermitCounts();

  /**
   * Where the leases are kept and what else an acquire asks.
   *
   * @param leases the lease records (memory, or shared by the replicas)
   * @param namespace the store's key namespace ({@code quotas.keyPrefix})
   * @param checks the snapshot's pre-decision checks in force (null: none)
   * @param events where acquires and lease ends are counted
   */
  public record Shared(
      PermitLeases leases,
      String namespace,
      Supplier<@Nullable CheckChain> checks,
      PermitEvents events) {}

  /**
   * @param tenants a tenant id's tenant (its tier); "" is the anonymous tenant
   * @param leaseNanos how long a permit outlives its last acquire or renew ({@code >= 1 ms})
   * @param maxLeases the most permits held or waiting at once ({@code >= 1})
   */
  public PermitDesk(
      AdmissionController controller,
      Function<String, Tenant> tenants,
      Ticker ticker,
      long leaseNanos,
      int maxLeases,
      Shared shared) {
    if (leaseNanos < 1_000_000 || maxLeases < 1) {
      throw new IllegalArgumentException(
          "leaseNanos " + leaseNanos + ", maxLeases " + maxLeases + " (expected: >= 1 ms, >= 1)");
    }
    this.controller = controller;
    this.tenants = tenants;
    this.ticker = ticker;
    this.leaseNanos = leaseNanos;
    this.maxLeases = maxLeases;
    this.shared = shared;
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
      TOO_MANY,
      /** The lease store did not answer. */
      UNAVAILABLE
    }

    static Answer of(Kind k, String message) {
      return new Answer(k, "", 0, "", 0, message, 0);
    }
  }

  /** Where an acquire's answer goes: called exactly once, maybe on another thread, later. */
  public interface Reply {
    void answer(Answer a);
  }

  /** Gives up a queued place (no-op when nothing waits). */
  public interface Cancel {
    Cancel NONE = () -> {};

    void cancel();
  }

  /**
   * Asks for a permit; {@code reply} is answered once, at once or when the checks' stores answer, a
   * queued permit starts or its wait ends. The returned handle gives up the acquire (a cancelled
   * call): its queued place, or its place before the pool decided.
   */
  public Cancel acquire(Request a, Reply reply) {
    Reply counted = counting(a, reply);
    String bad = PermitInput.invalid(a);
    if (bad != null) {
      counted.answer(Answer.of(Answer.Kind.INVALID, bad));
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
      counted.answer(
          Answer.of(
              Answer.Kind.NOT_FOUND,
              pool == null
                  ? "pool: " + a.pool() + " is not configured"
                  : "class: " + a.className() + " is not configured"));
      return Cancel.NONE;
    }
    String held = book.byOperation(a.opId());
    if (held != null) {
      var unused = shared.leases().renew(scope(a.pool()), held, leaseMillis());
      counted.answer(new Answer(Answer.Kind.GRANTED, held, leaseNanos, "", 0, "", 0));
      return Cancel.NONE;
    }
    if (!book.enter(maxLeases)) {
      counted.answer(
          Answer.of(
              Answer.Kind.TOO_MANY,
              book.closed() ? "shutting down" : "permits: " + maxLeases + " held or waiting"));
      return Cancel.NONE;
    }
    long now = ticker.nanos();
    Tenant tenant = tenants.apply(a.tenant());
    AdmissionRequest req =
        new AdmissionRequest(
            pool.policy(), cls, tenant, a.work(), now, now + cls.deadline().toNanos(), -1, -1);
    CheckChain chain = shared.checks().get();
    if (chain == null) {
      return decide(a, req, null, counted);
    }
    Subject subject =
        new Subject(
            "permit",
            pool.policy(),
            cls,
            RequestFormat.AUTO,
            tenant,
            now,
            req.deadlineNanos(),
            a.opId().isEmpty() ? null : a.opId(),
            a.maxWaitNanos(),
            false,
            0,
            null,
            Signals.NONE);
    PendingCancel later = new PendingCancel();
    var unused =
        DetachedChecks.run(chain, subject, a.work())
            .whenComplete(
                (r, e) -> {
                  if (e != null || r.refusal() != null) {
                    refused(PermitInput.reject(e == null ? r.refusal() : null), counted, 0);
                  } else if (!later.then(() -> decide(a, req, r.holds(), counted))) {
                    r.holds().release(false);
                    refused(PermitInput.CANCELLED, counted, 0);
                  }
                });
    return later;
  }

  private Cancel decide(
      Request a, AdmissionRequest req, DetachedChecks.@Nullable Holds holds, Reply reply) {
    long now = ticker.nanos();
    QueuedWaiter w = new QueuedWaiter(this, a, holds, reply);
    Decision d =
        a.maxWaitNanos() > 0
            ? controller.decide(req, Ask.hold(a.maxWaitNanos(), w, now))
            : controller.decide(req, Ask.now(now));
    if (d instanceof Decision.Admit ad) {
      granted(a, ad.permit(), holds, reply, Answer.Kind.GRANTED, 0);
      return Cancel.NONE;
    }
    if (d instanceof Decision.Queued q) {
      counts.queued.incrementAndGet();
      return () -> {
        if (controller.cancel(q.pool(), q.ticket(), ticker.nanos())) {
          w.cancelled();
        } else {
          w.gone = true; // admitted meanwhile: the waiter releases it
        }
      };
    }
    if (holds != null) {
      holds.release(false);
    }
    refused(d instanceof Decision.Reject rj ? rj : PermitInput.UNDECIDED, reply, 0);
    return Cancel.NONE;
  }

  void granted(
      Request a,
      Permit p,
      DetachedChecks.@Nullable Holds holds,
      Reply reply,
      Answer.Kind kind,
      long waited) {
    String id = a.pool() + "/" + prefix + ids.incrementAndGet();
    PermitBook.Lease lease = new PermitBook.Lease(a.pool(), p, holds, a.opId(), ticker.nanos());
    var unused =
        shared
            .leases()
            .grant(scope(a.pool()), id, maxLeases, leaseMillis())
            .whenComplete(
                (ok, e) -> {
                  boolean kept = e == null && ok && book.keep(id, lease);
                  if (!kept) {
                    if (e != null || !ok) {
                      book.left();
                    }
                    lease.giveBack(Outcome.CANCELLED, 0, ticker.nanos());
                    reply.answer(
                        e != null
                            ? Answer.of(Answer.Kind.UNAVAILABLE, "permit store: no answer")
                            : !ok
                                ? Answer.of(
                                    Answer.Kind.TOO_MANY,
                                    "permits: " + maxLeases + " live in pool " + a.pool())
                                : Answer.of(Answer.Kind.TOO_MANY, "shutting down"));
                    return;
                  }
                  counts.granted.incrementAndGet();
                  reply.answer(new Answer(kind, id, leaseNanos, "", 0, "", waited));
                });
  }

  void refused(Decision.Reject r, Reply reply, long waited) {
    book.left();
    counts.refused.incrementAndGet();
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

  /** Extends the lease of {@code permitId}, at any replica: NOT_FOUND when released or expired. */
  public CompletionStage<Answer> renew(String permitId) {
    String pool = PermitInput.poolOf(permitId);
    if (pool == null) {
      return CompletableFuture.completedFuture(notFound());
    }
    return shared
        .leases()
        .renew(scope(pool), permitId, leaseMillis())
        .handle(
            (ok, e) -> {
              if (e != null) {
                return Answer.of(Answer.Kind.UNAVAILABLE, "permit store: no answer");
              }
              if (!ok) {
                return notFound();
              }
              book.confirmed(permitId, ticker.nanos());
              return new Answer(Answer.Kind.GRANTED, permitId, leaseNanos, "", 0, "", 0);
            });
  }

  /**
   * Gives {@code permitId} back, at any replica (its {@code actualWork}, when more than acquired,
   * is counted first where it was granted here; it is reported at this replica, {@link
   * PermitEvents#work}): GRANTED for exactly one call, NOT_FOUND when it was released or expired
   * already. Granted at another replica, its pool's place comes back there at that replica's next
   * {@link #expireDue}. A release that comes after the lease ran out in the store but before the
   * granting replica saw it is counted once, here, as {@link
   * PermitEvents.End#RELEASED_AFTER_EXPIRY} (the granting replica gives its place back without
   * counting an expiry); it answers NOT_FOUND.
   */
  public CompletionStage<Answer> release(String permitId, long actualWork) {
    if (actualWork < 0) {
      return CompletableFuture.completedFuture(
          Answer.of(Answer.Kind.INVALID, "actual_work: " + actualWork + " (expected: >= 0)"));
    }
    String pool = PermitInput.poolOf(permitId);
    if (pool == null) {
      return CompletableFuture.completedFuture(notFound());
    }
    PermitBook.Lease mine = book.take(permitId);
    return shared
        .leases()
        .end(scope(pool), permitId)
        .handle(
            (ended, e) -> {
              if (mine != null) {
                mine.giveBack(Outcome.COMPLETED, actualWork, ticker.nanos());
              }
              PermitEvents.End how = PermitInput.howEnded(e == null ? ended : null, mine != null);
              if (how == null) {
                return e != null
                    ? Answer.of(Answer.Kind.UNAVAILABLE, "permit store: no answer")
                    : notFound();
              }
              shared.events().ended(pool, how);
              shared.events().work(pool, actualWork);
              if (how == PermitEvents.End.RELEASED) {
                counts.released.incrementAndGet();
                return new Answer(Answer.Kind.GRANTED, permitId, 0, "", 0, "", 0);
              }
              counts.releasedAfterExpiry.incrementAndGet();
              return Answer.of(Answer.Kind.NOT_FOUND, "permit: released after its lease expired");
            });
  }

  /**
   * Gives back every permit held here whose lease is no longer live in the store (expired, or
   * released at another replica); a timer calls it. An expired lease is ended in the store ({@link
   * PermitLeases#end}): counted as an expiry here only when this sweep ends it first (a caller's
   * release that came first was counted at its replica). When the store does not answer, a permit
   * not confirmed live for two leases is given back. Completes with how many expired.
   */
  public CompletionStage<Integer> expireDue() {
    List<CompletableFuture<Integer>> all = new ArrayList<>();
    for (Map.Entry<String, List<String>> e : book.byPool().entrySet()) {
      String pool = e.getKey();
      all.add(
          shared
              .leases()
              .states(scope(pool), e.getValue())
              .handle((states, err) -> settle(pool, states, err))
              .thenCompose(f -> f)
              .toCompletableFuture());
    }
    return CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0]))
        .thenApply(v -> all.stream().mapToInt(CompletableFuture::join).sum());
  }

  private CompletableFuture<Integer> settle(
      String pool, @Nullable Map<String, PermitLeases.State> states, @Nullable Throwable err) {
    long now = ticker.nanos();
    List<CompletableFuture<Integer>> ends = new ArrayList<>();
    if (err != null || states == null) {
      for (PermitBook.Lease l : book.takeStale(pool, now, 2 * leaseNanos)) {
        l.giveBack(Outcome.CANCELLED, 0, now);
        ends.add(CompletableFuture.completedFuture(expired(pool, 1)));
      }
    } else {
      for (Map.Entry<String, PermitLeases.State> s : states.entrySet()) {
        if (s.getValue() == PermitLeases.State.LIVE) {
          book.confirmed(s.getKey(), now);
          continue;
        }
        PermitBook.Lease l = book.take(s.getKey());
        if (l == null) {
          continue; // released here meanwhile
        }
        l.giveBack(Outcome.CANCELLED, 0, now);
        if (s.getValue() == PermitLeases.State.EXPIRED) { // unless a late release ends it first
          ends.add(
              shared
                  .leases()
                  .end(scope(pool), s.getKey())
                  .handle(
                      (ended, e) ->
                          expired(pool, ended == PermitLeases.Ended.GONE ? 0 : 1)) // GONE: late
                  .toCompletableFuture());
        } else if (s.getValue() == PermitLeases.State.GONE) {
          counts.releasedElsewhere.incrementAndGet();
          shared.events().ended(pool, PermitEvents.End.RELEASED_ELSEWHERE);
        } // RELEASED_AFTER_EXPIRY: counted once, where the release came
      }
    }
    return CompletableFuture.allOf(ends.toArray(new CompletableFuture<?>[0]))
        .thenApply(v -> ends.stream().mapToInt(CompletableFuture::join).sum());
  }

  /** Counts {@code n} (0 or 1) expiries of {@code pool}. */
  private int expired(String pool, int n) {
    if (n > 0) {
      counts.expired.incrementAndGet();
      shared.events().ended(pool, PermitEvents.End.EXPIRED);
    }
    return n;
  }

  /** Permits held here now (the held gauge). */
  public int leases() {
    return book.size();
  }

  /**
   * Counters: granted, queued, refused, expired, released (here), released at another replica,
   * released here after the lease expired.
   */
  public long[] counts() {
    return counts.snapshot();
  }

  /** Shutdown: every permit held here is given back (its record dropped); acquires are refused. */
  @Override
  public void close() {
    long now = ticker.nanos();
    for (Map.Entry<String, PermitBook.Lease> e : book.close().entrySet()) {
      e.getValue().giveBack(Outcome.SHUTDOWN, 0, now);
      var unused = shared.leases().release(scope(e.getValue().pool), e.getKey());
    }
  }

  private PermitLeases.Scope scope(String pool) {
    return new PermitLeases.Scope(shared.namespace(), pool);
  }

  private long leaseMillis() {
    return Math.max(1, leaseNanos / 1_000_000L);
  }

  private static Answer notFound() {
    return Answer.of(Answer.Kind.NOT_FOUND, "permit: unknown, released or expired");
  }

  /** Counts every acquire's answer by pool and kind ({@link PermitEvents#acquired}). */
  private Reply counting(Request a, Reply reply) {
    return answer -> {
      PoolState known = controller.pool(a.pool());
      shared.events().acquired(known == null ? "" : a.pool(), answer.kind(), answer.waitedNanos());
      reply.answer(answer);
    };
  }

  /** The process's ticker, and the book (the queued waiters). */
  Ticker ticker() {
    return ticker;
  }

  PermitBook book() {
    return book;
  }
}
