package io.sluice.core.session;

import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Ask;
import io.sluice.core.admission.Decision;
import io.sluice.core.admission.Permit;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.BodyRewrite;
import io.sluice.core.estimate.EstimateLimits;
import io.sluice.core.estimate.OutputShape;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.DegradePolicy;
import io.sluice.core.policy.EnginePriority;
import io.sluice.core.policy.PoolPolicy;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A request's degrade ladder (its class's {@link DegradePolicy}) and the engine priority of the
 * pool it runs in: which rung, if any, can start it at once, and what the upstream then gets. No
 * state of its own: {@link AdmissionSession} asks, and applies the {@link Run} it gets back.
 *
 * <p>A rung passes the same admission check as any request ({@link
 * io.sluice.core.admission.Ask.Mode#RUNG}: never queued, never ahead of a waiting request of equal
 * or higher priority), in its own pool ({@code concise}) or the target pool ({@code reroute}),
 * which then holds its permit.
 */
final class DegradeLadder {
  /** Why a rung did not admit the request ({@link SessionEvent.DegradeSkipped#cause}). */
  static final List<String> SKIP_CAUSES =
      List.of("no_body", "unreadable", "no_saving", "no_room", "no_pool");

  private DegradeLadder() {}

  /**
   * The request as the ladder sees it: the body (null when decided at headers or not kept), the
   * estimate and work it was decided with, the class's estimate limits.
   */
  @SuppressWarnings("ArrayRecordComponent") // the body by reference: never compared or hashed
  record Request(
      Subject subject,
      byte @Nullable [] body,
      int offset,
      int length,
      TokenEstimate estimate,
      long workUnits,
      long fanOutWork,
      EstimateLimits limits) {}

  /**
   * A rung admitted the request: the pool it runs in and holds {@code permit} of, the estimate and
   * work counted, the body the upstream gets (null: unchanged), request headers to set, and whether
   * Envoy must pick its route again.
   */
  @SuppressWarnings("ArrayRecordComponent") // the body by reference: never compared or hashed
  record Run(
      String rung,
      PoolPolicy pool,
      TokenEstimate estimate,
      long workUnits,
      long fanOutWork,
      byte @Nullable [] body,
      Map<String, String> headers,
      boolean clearRouteCache,
      Permit permit) {}

  /**
   * Tries the rungs in order; the first that can start the request at once admits it (its permit is
   * in the run). Each rung that did not is emitted ({@link SessionEvent.DegradeSkipped}). Null when
   * none did.
   */
  static @Nullable Run tryRungs(Sessions env, DegradePolicy ladder, Request r) {
    for (DegradePolicy.Rung rung : ladder.ladder()) {
      Object result =
          rung instanceof DegradePolicy.Concise c
              ? concise(env, c, r)
              : reroute(env, (DegradePolicy.Reroute) rung, r);
      if (result instanceof Run run) {
        return run;
      }
      env.listener().on(new SessionEvent.DegradeSkipped(r.subject(), rung.name(), (String) result));
    }
    return null;
  }

  /** The concise rung: a {@link Run}, or the skip cause. */
  private static Object concise(Sessions env, DegradePolicy.Concise c, Request r) {
    Object v = conciseVariant(env, c, r);
    if (!(v instanceof Variant variant)) {
      return v;
    }
    Subject subject = r.subject();
    PoolPolicy pool = subject.pool();
    Decision d =
        env.controller()
            .decide(
                admission(subject, pool, variant.workUnits(), variant.estimate()),
                Ask.rung(env.ticker().nanos()));
    if (!(d instanceof Decision.Admit a)) {
      return "no_room";
    }
    return new Run(
        DegradePolicy.Concise.NAME,
        pool,
        variant.estimate(),
        variant.workUnits(),
        r.fanOutWork(),
        variant.body(),
        Map.of(),
        false,
        a.permit());
  }

  /** The concise version of a request: its rewritten body, its estimate and work in its pool. */
  @SuppressWarnings("ArrayRecordComponent") // the body by reference: never compared or hashed
  record Variant(TokenEstimate estimate, long workUnits, byte[] body) {}

  /**
   * The concise version of the request (the class's concise rung applied to its body, estimated
   * again), or the cause it has none: {@code no_body}, {@code unreadable}, {@code no_saving}.
   */
  static Object conciseVariant(Sessions env, DegradePolicy.Concise c, Request r) {
    byte[] b = r.body();
    if (b == null) {
      return "no_body";
    }
    Subject subject = r.subject();
    PoolPolicy pool = subject.pool();
    long cap = Math.min(c.maxOutputTokens(), subject.requestClass().maxOutputTokens());
    BodyRewrite.Edits edits =
        priorityEdits(env, subject, pool).withCap(cap, c.capField(), c.instruction());
    byte[] rewritten = BodyRewrite.apply(subject.format(), b, r.offset(), r.length(), edits);
    if (rewritten == null) {
      return "unreadable";
    }
    TokenEstimate e =
        env.estimator()
            .estimate(
                subject.format(), rewritten, 0, rewritten.length, r.limits(), new OutputShape());
    long work = pool.workUnits(e.inputTokens(), e.outputReserveTokens(), r.fanOutWork());
    if (work >= r.workUnits()) {
      return "no_saving";
    }
    return new Variant(e, work, rewritten);
  }

  /** The ladder's concise rung, or null when it has none. */
  static DegradePolicy.@Nullable Concise conciseRung(DegradePolicy ladder) {
    for (DegradePolicy.Rung rung : ladder.ladder()) {
      if (rung instanceof DegradePolicy.Concise c) {
        return c;
      }
    }
    return null;
  }

  /** The reroute rung: a {@link Run}, or the skip cause. */
  private static Object reroute(Sessions env, DegradePolicy.Reroute rr, Request r) {
    Subject subject = r.subject();
    PoolState target = env.controller().pool(rr.pool());
    if (target == null || rr.pool().equals(subject.pool().name())) {
      return "no_pool";
    }
    PoolPolicy pool = target.policy();
    BodyRewrite.Edits edits = priorityEdits(env, subject, pool).withModel(rr.model());
    byte[] rewritten = null;
    byte[] b = r.body();
    if (b == null) {
      if (rr.model() != null) {
        return "no_body";
      }
    } else if (edits.any()) {
      rewritten = BodyRewrite.apply(subject.format(), b, r.offset(), r.length(), edits);
      if (rewritten == null && rr.model() != null) {
        return "unreadable";
      }
    }
    TokenEstimate e = r.estimate();
    long fan = pool.fanout().workUnits(e.fanOut(), subject.fanout());
    long work = pool.workUnits(e.inputTokens(), e.outputReserveTokens(), fan);
    Decision d =
        env.controller().decide(admission(subject, pool, work, e), Ask.rung(env.ticker().nanos()));
    if (!(d instanceof Decision.Admit a)) {
      return "no_room";
    }
    boolean routed = rr.header() != null && rr.value() != null;
    return new Run(
        DegradePolicy.Reroute.NAME,
        pool,
        e,
        work,
        fan,
        rewritten,
        routed ? Map.of(rr.header(), rr.value()) : Map.of(),
        routed,
        a.permit());
  }

  private static AdmissionRequest admission(
      Subject subject, PoolPolicy pool, long work, TokenEstimate e) {
    return new AdmissionRequest(
        pool,
        subject.requestClass(),
        subject.tenant(),
        work,
        subject.arrivalNanos(),
        subject.deadlineNanos(),
        e.inputTokens(),
        e.outputReserveTokens());
  }

  /** The engine priority of the request in {@code pool}, as a body edit (none when off). */
  static BodyRewrite.Edits priorityEdits(Sessions env, Subject subject, PoolPolicy pool) {
    String field = pool.enginePriority().field();
    String v = enginePriority(env, subject, pool);
    return field == null || v == null
        ? BodyRewrite.Edits.NONE
        : BodyRewrite.Edits.NONE.withPriority(field, v);
  }

  /** The engine priority of the request in {@code pool} (JSON number text), or null when none. */
  static @Nullable String enginePriority(Sessions env, Subject subject, PoolPolicy pool) {
    EnginePriority ep = pool.enginePriority();
    if (!ep.enabled()) {
      return null;
    }
    ClassPolicy cls = subject.requestClass();
    List<ClassPolicy> all = env.controller().classes();
    int maxRank = all.isEmpty() ? cls.rank() : all.get(all.size() - 1).rank();
    return ep.valueFor(cls.name(), cls.rank(), maxRank, subject.tenant().tier().name());
  }
}
