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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The first {@link Planner}: a request's degrade ladder (its class's {@link DegradePolicy}) and the
 * engine priority of the pool it runs in. When the pool cannot start the request now (its predicted
 * wait is above the class's {@code waitAbove}, or the capacity free for the class is below its
 * {@code headroomBelow}), a rung that can start it at once admits it ({@link Run}); else it waits
 * (or is refused) as its concise version when it has one. It returns the plan, never sets the
 * session's state; its own state is the body it keeps while it may rewrite it.
 *
 * <p>A rung passes the same admission check as any request ({@link
 * io.sluice.core.admission.Ask.Mode#RUNG}: never queued, never ahead of a waiting request of equal
 * or higher priority), in its own pool ({@code concise}) or the target pool ({@code reroute}),
 * which then holds its permit.
 */
final class DegradeLadder implements Planner {
  /** Why a rung did not admit the request ({@link SessionEvent.DegradeSkipped#cause}). */
  static final List<String> SKIP_CAUSES =
      List.of("no_body", "unreadable", "no_saving", "no_room", "no_pool");

  /** The trigger: the predicted wait (or a refusal) of a request that cannot start now. */
  static final String TRIGGER_WAIT = "wait";

  /** The trigger: the capacity free for the class fell below the class's level. */
  static final String TRIGGER_HEADROOM = "headroom";

  private final Sessions env;
  private final Subject subject;
  private final Supplier<CheckNotes> notes; // what the checks noted: a Planner.Trigger fires
  private byte @Nullable [] body; // the request body, kept while it may be rewritten (not copied)
  private int offset;
  private int length;
  private boolean forbidden;
  private @Nullable Planned planned; // the last decision's plan

  DegradeLadder(Sessions env, Subject subject, Supplier<CheckNotes> notes) {
    this.env = env;
    this.subject = subject;
    this.notes = notes;
  }

  /**
   * The request's planner: a ladder of its own when its class has a degrade ladder or its pool an
   * engine priority, else the shared {@link Planner.AsAsked} (it would plan nothing, keep nothing).
   */
  static Planner of(Sessions env, Subject subject, Supplier<CheckNotes> notes) {
    return subject.requestClass().degrade().enabled() || subject.pool().enginePriority().enabled()
        ? new DegradeLadder(env, subject, notes)
        : Planner.AsAsked.INSTANCE;
  }

  @Override
  public void forbid() {
    forbidden = true;
  }

  @Override
  public void offer(byte[] body, int offset, int length) {
    if (mayRewrite()) {
      this.body = body;
      this.offset = offset;
      this.length = length;
    }
  }

  /** Whether the body may be rewritten (kept until the decision): a ladder or engine priority. */
  private boolean mayRewrite() {
    if (subject.shadow()) {
      return false;
    }
    if (subject.requestClass().degrade().enabled() && !forbidden) {
      return true;
    }
    EnginePriority ep = subject.pool().enginePriority();
    return ep.enabled() && ep.field() != null;
  }

  /** The class's ladder when this request may be degraded, else null. */
  private @Nullable DegradePolicy ladder() {
    DegradePolicy d = subject.requestClass().degrade();
    if (!d.enabled() || subject.shadow()) {
      return null;
    }
    if (forbidden) {
      env.listener().on(new SessionEvent.DegradeSkipped(subject, "all", "forbidden"));
      return null;
    }
    return d;
  }

  @Override
  public Decision decide(AdmissionRequest request, RequestCost asked, boolean atBody, Pool pool) {
    Planned p = plan(request, asked, atBody, pool);
    planned = p;
    return p.decision();
  }

  @Override
  public @Nullable Cost runsAs() {
    Planned p = planned;
    return p == null ? null : p.runsAs();
  }

  @Override
  public UpstreamPlan plan(AdmissionRequest request) {
    Planned p = planned;
    return p == null ? UpstreamPlan.asAsked(request.pool()) : p.plan();
  }

  private Planned plan(AdmissionRequest request, RequestCost asked, boolean atBody, Pool pool) {
    DegradePolicy ladder = ladder();
    if (ladder == null) { // nothing to plan: the pool decides, no wait ladder
      return new Planned(pool.decide(request, 0), null, UpstreamPlan.asAsked(subject.pool()));
    }
    Request r =
        new Request(
            subject,
            atBody ? body : null,
            offset,
            length,
            Objects.requireNonNull(asked.estimate(), "estimate before the decision"),
            asked.workUnits(),
            asked.fanOutWork(),
            limits(subject));
    Planner.Trigger asks = notes.get().get(Planner.Trigger.class);
    String trigger = asks == null ? null : asks.degradeTrigger();
    if (asks != null && trigger != null) { // a check asks for a cheaper run now: a rung at once
      Run run = tryRungs(env, ladder, r, asks.degradeRung());
      if (run != null) {
        return admitted(run, trigger);
      }
    }
    if (ladder.headroomBelow() > 0) {
      PoolState state = env.controller().pool(subject.pool().name());
      if (state != null
          && state.classHeadroom(subject.requestClass().name()) < ladder.headroomBelow()) {
        Run run = tryRungs(env, ladder, r);
        // the pool's free capacity for the class is low and no rung starts the request now: it
        // waits (or is refused) as its concise version, as a concise one that started would run
        return run != null
            ? admitted(run, TRIGGER_HEADROOM)
            : waitConcise(ladder, r, request, TRIGGER_HEADROOM, pool);
      }
    }
    Decision d = pool.decide(request, ladder.waitAbove().toNanos());
    if (!(d instanceof Decision.Degradable)) {
      return new Planned(d, null, UpstreamPlan.asAsked(subject.pool()));
    }
    Run run = tryRungs(env, ladder, r);
    // no rung starts it now: it waits (or is refused) as its concise version when it has one
    return run != null
        ? admitted(run, TRIGGER_WAIT)
        : waitConcise(ladder, r, request, TRIGGER_WAIT, pool);
  }

  /** A rung admitted the request: it runs as the rung's version, in the rung's pool. */
  private static Planned admitted(Run run, String trigger) {
    return new Planned(
        new Decision.Admit(run.permit()),
        new Cost(run.estimate(), run.workUnits(), run.fanOutWork()),
        new UpstreamPlan(
            run.pool(),
            run.body(),
            run.headers(),
            run.clearRouteCache(),
            null,
            run.rung(),
            trigger));
  }

  /**
   * A trigger fired ({@code trigger}: the wait, or the headroom) and no rung starts the request
   * now: with a concise rung (and a body it applies to), the request waits as its concise version —
   * a cheaper answer that frees its place sooner — and is degraded when it starts (refused: not
   * degraded). Else it waits as {@code request}. No wait ladder: it fired already.
   */
  private Planned waitConcise(
      DegradePolicy ladder, Request r, AdmissionRequest request, String trigger, Pool pool) {
    DegradePolicy.Concise c = conciseRung(ladder);
    Object v = c == null ? null : conciseVariant(env, c, r);
    if (!(v instanceof Variant variant)) {
      return new Planned(pool.decide(request, 0), null, UpstreamPlan.asAsked(subject.pool()));
    }
    AdmissionRequest concise =
        admission(subject, subject.pool(), variant.workUnits(), variant.estimate());
    return new Planned(
        pool.decide(concise, 0),
        new Cost(variant.estimate(), variant.workUnits(), r.fanOutWork()),
        new UpstreamPlan(
            subject.pool(),
            variant.body(),
            Map.of(),
            false,
            null,
            DegradePolicy.Concise.NAME,
            trigger));
  }

  /**
   * What the upstream gets beyond the decision's own headers, fixed when the request is admitted:
   * the engine priority (body field and/or header) of the pool it runs in, the rung's rewrite.
   */
  @Override
  public UpstreamPlan admitted(UpstreamPlan plan, boolean atBody) {
    PoolPolicy pool = plan.pool();
    EnginePriority ep = pool.enginePriority();
    String v = enginePriority(env, subject, pool);
    String written = v;
    Map<String, String> headers = plan.headers();
    if (v != null && ep.header() != null) {
      Map<String, String> h = new LinkedHashMap<>(headers);
      h.put(ep.header(), v);
      headers = h;
    }
    byte[] upstream = plan.body();
    byte[] b = body;
    if (upstream == null && plan.rung() == null && v != null && ep.field() != null) {
      if (atBody && b != null) {
        upstream =
            BodyRewrite.apply(
                subject.format(), b, offset, length, priorityEdits(env, subject, pool));
      }
      if (upstream == null && ep.header() == null) {
        written = null; // written nowhere: the decision must not claim it
      }
    }
    body = null; // decided: the body is not needed any more
    return new UpstreamPlan(
        pool, upstream, headers, plan.clearRouteCache(), written, plan.rung(), plan.trigger());
  }

  @Override
  public void refused() {
    body = null;
  }

  private static EstimateLimits limits(Subject subject) {
    return new EstimateLimits(
        subject.requestClass().defaultOutputTokens(), subject.requestClass().maxOutputTokens());
  }

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
    return tryRungs(env, ladder, r, null);
  }

  /** As above, only the rung named {@code only} when not null. */
  static @Nullable Run tryRungs(
      Sessions env, DegradePolicy ladder, Request r, @Nullable String only) {
    for (DegradePolicy.Rung rung : ladder.ladder()) {
      if (only != null && !only.equals(rung.name())) {
        continue;
      }
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
    // the rung's model runs it: what it costs (a money budget's price) is that model's
    TokenEstimate e = rr.model() == null ? r.estimate() : r.estimate().withModel(rr.model());
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
