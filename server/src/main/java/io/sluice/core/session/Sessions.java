package io.sluice.core.session;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.estimate.OutputReserves;
import io.sluice.core.estimate.TokenEstimator;
import io.sluice.core.quota.SharedWorkflowBudget;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.quota.WorkflowBudget;
import io.sluice.core.time.Ticker;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * Opens {@link AdmissionSession}s on one runtime snapshot: its controller, tenant quotas, estimator
 * and listener, and its pre-decision checks ({@link CheckChain}, built once here). Immutable; one
 * per config snapshot, so a reload never changes a session half-way.
 *
 * <p>The snapshot's parts ({@link #builder}: the required ones, then the optional ones with their
 * defaults):
 *
 * <ul>
 *   <li>defaultInputTokens the cost of a body of unknown size ({@code
 *       estimation.defaultInputTokens})
 *   <li>caps the tenants' {@code maxInFlight} across replicas ({@link TenantCaps#none()} when the
 *       store is in this process)
 *   <li>clock wall-clock time for the tenant buckets and the decision record (never read for queue
 *       age or deadlines: those use {@code ticker})
 *   <li>reserves the learned output reserve: one per process, passed into every snapshot, so a
 *       reload keeps what it learned ({@link OutputReserves#off()}: the old rule)
 *   <li>workflows the workflows' places in their pools' budgets ({@code pools.<name>.workflow}; one
 *       per process: it outlives the snapshot)
 *   <li>tails the permits held for a predicted tail (one per process, released all at shutdown)
 *   <li>checks the checks the features contribute ({@link AdmissionCheck.Contributed}: built once
 *       here, at their places in the chain; none by default)
 *   <li>planners the planners the features contribute ({@link Planner.Factory}: built once here;
 *       none by default)
 * </ul>
 */
public final class Sessions {
  private final AdmissionController controller;
  private final TenantQuotas quotas;
  private final TokenEstimator estimator;
  private final long defaultInputTokens;
  private final Ticker ticker;
  private final Clock clock;
  private final HoldTimer timer;
  private final SessionListener listener;
  private final TenantCaps caps;
  private final OutputReserves reserves;
  private final WorkflowBudget workflows;
  private final SharedWorkflowBudget places;
  private final TailHolds tails;
  private final CheckChain checks; // built once here, from the above
  private final List<Planner.Source> planners; // the contributed planners, built once here
  private final BodyRouter bodyRouter;

  private Sessions(Builder b) {
    this.controller = b.controller;
    this.quotas = b.quotas;
    this.estimator = b.estimator;
    this.defaultInputTokens = b.defaultInputTokens;
    this.ticker = b.ticker;
    this.clock = b.clock;
    this.timer = b.timer;
    this.listener = b.listener;
    this.caps = b.caps;
    this.reserves = b.reserves;
    this.workflows =
        b.shared != null
            ? b.shared.localBudget()
            : b.workflows != null
                ? b.workflows
                : new WorkflowBudget(WorkflowBudget.DEFAULT_MAX_WORKFLOWS);
    this.places = b.shared != null ? b.shared : SharedWorkflowBudget.local(workflows);
    this.tails = b.tails != null ? b.tails : new TailHolds();
    this.bodyRouter = b.bodyRouter;
    this.checks =
        CheckChain.of(
            quotas, clock, listener, controller, caps, places, List.copyOf(b.contributed));
    AdmissionCheck.Context context = new AdmissionCheck.Context(controller, listener, clock);
    List<Planner.Source> p = new ArrayList<>(b.planners.size());
    for (Planner.Factory f : b.planners) {
      Planner.Source source = f.create(context);
      if (source != null) {
        p.add(source);
      }
    }
    this.planners = List.copyOf(p);
  }

  /** {@code estimation.defaultInputTokens}'s default: the cost of a body of unknown size. */
  public static final long DEFAULT_INPUT_TOKENS = 1024;

  /**
   * Sessions on these required parts; the rest default to a replica on its own (tests, tools): a
   * body of unknown size costs {@link #DEFAULT_INPUT_TOKENS}, the tenants' {@code maxInFlight} is
   * this replica's ({@link TenantCaps#none()}), no learned output reserve ({@link
   * OutputReserves#off()}), a workflow budget and held tails of their own, no contributed check. A
   * server passes its process's reserves, workflows and tails, and its features' checks.
   */
  public static Builder builder(
      AdmissionController controller,
      TenantQuotas quotas,
      TokenEstimator estimator,
      Ticker ticker,
      Clock clock,
      HoldTimer timer,
      SessionListener listener) {
    return new Builder(controller, quotas, estimator, ticker, clock, timer, listener);
  }

  /** The optional parts of {@link Sessions}, each with its default (see {@link #builder}). */
  public static final class Builder {
    private final AdmissionController controller;
    private final TenantQuotas quotas;
    private final TokenEstimator estimator;
    private final Ticker ticker;
    private final Clock clock;
    private final HoldTimer timer;
    private final SessionListener listener;
    private long defaultInputTokens = DEFAULT_INPUT_TOKENS;
    private TenantCaps caps = TenantCaps.none();
    private OutputReserves reserves = OutputReserves.off();
    private @Nullable WorkflowBudget workflows; // null: a budget of the sessions' own
    private @Nullable SharedWorkflowBudget shared; // null: the workflows' places in this process
    private @Nullable TailHolds tails; // null: held tails of the sessions' own
    private final List<AdmissionCheck.Contributed> contributed = new ArrayList<>();
    private final List<Planner.Factory> planners = new ArrayList<>();
    private BodyRouter bodyRouter = BodyRouter.NONE;

    private Builder(
        AdmissionController controller,
        TenantQuotas quotas,
        TokenEstimator estimator,
        Ticker ticker,
        Clock clock,
        HoldTimer timer,
        SessionListener listener) {
      this.controller = Objects.requireNonNull(controller, "controller");
      this.quotas = Objects.requireNonNull(quotas, "quotas");
      this.estimator = Objects.requireNonNull(estimator, "estimator");
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      this.clock = Objects.requireNonNull(clock, "clock");
      this.timer = Objects.requireNonNull(timer, "timer");
      this.listener = Objects.requireNonNull(listener, "listener");
    }

    /** The cost of a body of unknown size ({@code estimation.defaultInputTokens}). */
    public Builder defaultInputTokens(long tokens) {
      this.defaultInputTokens = tokens;
      return this;
    }

    /** The tenants' {@code maxInFlight} across replicas. */
    public Builder caps(TenantCaps c) {
      this.caps = Objects.requireNonNull(c, "caps");
      return this;
    }

    /** The process's learned output reserve. */
    public Builder reserves(OutputReserves r) {
      this.reserves = Objects.requireNonNull(r, "reserves");
      return this;
    }

    /** The process's workflow budgets. */
    public Builder workflows(WorkflowBudget w) {
      this.workflows = Objects.requireNonNull(w, "workflows");
      return this;
    }

    /**
     * The workflows' places counted in the store the replicas share (its local budget then replaces
     * {@link #workflows}).
     */
    public Builder sharedWorkflows(SharedWorkflowBudget w) {
      this.shared = Objects.requireNonNull(w, "sharedWorkflows");
      return this;
    }

    /** The process's held tails. */
    public Builder tails(TailHolds t) {
      this.tails = Objects.requireNonNull(t, "tails");
      return this;
    }

    /** A check a feature contributes, at its place ({@link AdmissionCheck.Contributed}). */
    public Builder check(AdmissionCheck.Contributed c) {
      contributed.add(Objects.requireNonNull(c, "check"));
      return this;
    }

    /** A check at {@code order} ({@link AdmissionCheck.Contributed}). */
    public Builder check(int order, AdmissionCheck.Factory factory) {
      return check(new AdmissionCheck.Contributed(order, factory));
    }

    /**
     * A planner a feature contributes ({@link Planner.Factory}): it plans what happens to the
     * refusals of the requests it plans for, after the session's own planner ({@link Planners}).
     */
    public Builder planner(Planner.Factory factory) {
      planners.add(Objects.requireNonNull(factory, "planner"));
      return this;
    }

    /** What chooses the pool of a request from its body ({@link BodyRouter}; none by default). */
    public Builder bodyRouter(BodyRouter r) {
      this.bodyRouter = Objects.requireNonNull(r, "bodyRouter");
      return this;
    }

    public Sessions build() {
      return new Sessions(this);
    }
  }

  public AdmissionController controller() {
    return controller;
  }

  public TenantQuotas quotas() {
    return quotas;
  }

  public TokenEstimator estimator() {
    return estimator;
  }

  public long defaultInputTokens() {
    return defaultInputTokens;
  }

  public Ticker ticker() {
    return ticker;
  }

  public Clock clock() {
    return clock;
  }

  public HoldTimer timer() {
    return timer;
  }

  public SessionListener listener() {
    return listener;
  }

  public TenantCaps caps() {
    return caps;
  }

  public OutputReserves reserves() {
    return reserves;
  }

  public WorkflowBudget workflows() {
    return workflows;
  }

  /** The workflows' places (across replicas when {@link SharedWorkflowBudget#shared()}). */
  public SharedWorkflowBudget sharedWorkflows() {
    return places;
  }

  public TailHolds tails() {
    return tails;
  }

  /** What chooses the pool of a request from its body ({@link BodyRouter#NONE}: nothing). */
  public BodyRouter bodyRouter() {
    return bodyRouter;
  }

  /** The snapshot's pre-decision checks, in order. */
  public CheckChain checks() {
    return checks;
  }

  /** The contributed planners' makers ({@link Planners}), in registration order. */
  List<Planner.Source> planners() {
    return planners;
  }

  /**
   * A session for one request.
   *
   * @param serial the front end's serial context: every continuation (quota store answers, waiter
   *     callbacks from other threads) runs there, one at a time, as the front end's own calls do
   */
  public AdmissionSession open(
      Subject subject, SessionFront front, Executor serial, SessionSteps steps) {
    return open(subject, front, serial, steps, clock.millis());
  }

  /**
   * A session for one request that arrived at {@code arrivalEpochMillis} on {@link #clock}: the
   * front end's read of it at that instant (one read it shares with what it answers then).
   */
  public AdmissionSession open(
      Subject subject,
      SessionFront front,
      Executor serial,
      SessionSteps steps,
      long arrivalEpochMillis) {
    return new AdmissionSession(this, subject, front, serial, steps, arrivalEpochMillis);
  }
}
