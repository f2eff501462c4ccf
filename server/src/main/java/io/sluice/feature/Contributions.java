package io.sluice.feature;

import io.sluice.core.session.AdmissionCheck;
import io.sluice.core.session.SessionListener;
import io.sluice.observability.DecisionRecordPart;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What the features add to one snapshot's runtime ({@link Feature#contribute}), in registration
 * order: the checks at their places in the chain, the planners, the session listeners (after the
 * built-in ones), the decision-record parts. Collected by the bootstrap's runtime factory; not
 * thread-safe.
 */
public final class Contributions {
  private final List<AdmissionCheck.Contributed> checks = new ArrayList<>();
  private final List<SessionListener> listeners = new ArrayList<>();
  private final List<DecisionRecordPart> recordParts = new ArrayList<>();
  private final List<io.sluice.core.session.Planner.Factory> planners = new ArrayList<>();
  private io.sluice.core.session.BodyRouter bodyRouter = io.sluice.core.session.BodyRouter.NONE;
  private io.sluice.core.estimate.@Nullable LearnedBytesPerToken bytesPerToken;

  /** A check at its place ({@link AdmissionCheck.Contributed}). */
  public Contributions check(int order, AdmissionCheck.Factory factory) {
    checks.add(new AdmissionCheck.Contributed(order, Objects.requireNonNull(factory)));
    return this;
  }

  /**
   * A planner of what happens to a refused request ({@link io.sluice.core.session.Planner#instead};
   * after the session's own planner, in registration order).
   */
  public Contributions planner(io.sluice.core.session.Planner.Factory factory) {
    planners.add(Objects.requireNonNull(factory));
    return this;
  }

  /** A listener of the sessions' events (its failure never keeps an event from the others). */
  public Contributions listener(SessionListener l) {
    listeners.add(Objects.requireNonNull(l));
    return this;
  }

  /** Fields added to every decision record. */
  public Contributions recordPart(DecisionRecordPart p) {
    recordParts.add(Objects.requireNonNull(p));
    return this;
  }

  /**
   * What chooses a request's pool from its body (one per snapshot: a second router is a wiring
   * error).
   */
  public Contributions bodyRouter(io.sluice.core.session.BodyRouter r) {
    if (bodyRouter != io.sluice.core.session.BodyRouter.NONE) {
      throw new IllegalStateException("a body router is contributed already");
    }
    bodyRouter = Objects.requireNonNull(r);
    return this;
  }

  /**
   * The learned bytes-per-token the headers' estimates divide a content-length by (one per
   * snapshot: a second is a wiring error); without one, {@code estimation.bytesPerToken}.
   */
  public Contributions bytesPerToken(io.sluice.core.estimate.LearnedBytesPerToken l) {
    if (bytesPerToken != null) {
      throw new IllegalStateException("a learned bytes-per-token is contributed already");
    }
    bytesPerToken = Objects.requireNonNull(l);
    return this;
  }

  public io.sluice.core.estimate.@Nullable LearnedBytesPerToken bytesPerToken() {
    return bytesPerToken;
  }

  public io.sluice.core.session.BodyRouter bodyRouter() {
    return bodyRouter;
  }

  public List<AdmissionCheck.Contributed> checks() {
    return List.copyOf(checks);
  }

  public List<io.sluice.core.session.Planner.Factory> planners() {
    return List.copyOf(planners);
  }

  public List<SessionListener> listeners() {
    return List.copyOf(listeners);
  }

  public List<DecisionRecordPart> recordParts() {
    return List.copyOf(recordParts);
  }
}
