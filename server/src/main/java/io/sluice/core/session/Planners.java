package io.sluice.core.session;

import io.sluice.core.admission.AdmissionRequest;
import io.sluice.core.admission.Decision;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A request's planner: its own ({@link DegradeLadder#of}: the ladder, or the shared {@link
 * Planner.AsAsked}), then the ones the features contribute that plan for it ({@link
 * Planner.Source}), composed: the first decides (the others are never asked to), every one sees the
 * body and lets it go, and a refusal goes to each in order until one answers it another way ({@link
 * Planner#instead}). A request no contributed planner plans for gets its own planner as it is
 * (nothing allocated).
 */
final class Planners {
  private Planners() {}

  /**
   * The planner of {@code subject}'s request on {@code env}'s snapshot; {@code notes}: what its
   * checks noted, read when it is decided (a {@link Planner.Trigger} among them fires the ladder).
   */
  static Planner of(Sessions env, Subject subject, Supplier<CheckNotes> notes) {
    Planner p = DegradeLadder.of(env, subject, notes);
    List<Planner.Source> sources = env.planners();
    for (int i = 0; i < sources.size(); i++) {
      Planner q = sources.get(i).of(subject);
      if (q != null) {
        p = new Then(p, q);
      }
    }
    return p;
  }

  /** {@code first} decides; {@code then} may answer a refusal {@code first} lets stand. */
  private static final class Then implements Planner {
    private final Planner first;
    private final Planner then;
    private @Nullable Planner answering; // the one whose stage answers the refusal

    Then(Planner first, Planner then) {
      this.first = first;
      this.then = then;
    }

    @Override
    public void forbid() {
      first.forbid();
      then.forbid();
    }

    @Override
    public void offer(byte[] body, int offset, int length) {
      first.offer(body, offset, length);
      then.offer(body, offset, length);
    }

    @Override
    public Decision decide(AdmissionRequest request, RequestCost asked, boolean atBody, Pool pool) {
      return first.decide(request, asked, atBody, pool);
    }

    @Override
    public @Nullable Cost runsAs() {
      return first.runsAs();
    }

    @Override
    public UpstreamPlan plan(AdmissionRequest request) {
      return first.plan(request);
    }

    @Override
    public UpstreamPlan admitted(UpstreamPlan plan, boolean atBody) {
      return then.admitted(first.admitted(plan, atBody), atBody);
    }

    @Override
    public void refused() {
      first.refused();
      then.refused();
    }

    @Override
    public @Nullable CompletionStage<Instead> instead(
        Decision.Reject refusal, AdmissionCheck.Request request) {
      CompletionStage<Instead> s = first.instead(refusal, request);
      answering = s != null ? first : then;
      return s != null ? s : then.instead(refusal, request);
    }

    @Override
    public @Nullable Object unanswered(Instead answer) {
      Planner p = answering;
      return p != null ? p.unanswered(answer) : null;
    }
  }
}
