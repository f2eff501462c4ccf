package io.sluice.config;

import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How Sluice speaks the vocabulary of an llm-d / Gateway API Inference Extension stack (the {@code
 * llmD} section, docs/configuration.md "llm-d and the Inference Extension"): which Sluice class an
 * {@code InferenceObjective} name stands for, and whether a refusal also carries llm-d's {@code
 * x-llm-d-request-dropped-reason}. The objective name reaches Sluice only through a trusted {@code
 * class} signal (e.g. the header {@code x-llm-d-inference-objective} listed under {@code
 * signals.class}); this record never makes a header trusted.
 *
 * @param objectiveClasses InferenceObjective name to Sluice class name (a {@code class} signal
 *     value that is not a class name is looked up here)
 * @param priorityClasses the lowest InferenceObjective priority each class takes (an objective
 *     given as a priority gets the class with the highest minimum at or below it)
 * @param droppedReasonHeader whether refusals also carry {@code x-llm-d-request-dropped-reason}
 */
public record LlmdInterop(
    Map<String, String> objectiveClasses,
    Map<String, Integer> priorityClasses,
    boolean droppedReasonHeader) {

  /** The response header llm-d's flow control answers a dropped request with. */
  public static final String DROPPED_REASON_HEADER = "x-llm-d-request-dropped-reason";

  /** The trusted request header llm-d's auth policy sets to an InferenceObjective name. */
  public static final String OBJECTIVE_HEADER = "x-llm-d-inference-objective";

  /** The trusted request header llm-d's auth policy sets to the flow's fairness id. */
  public static final String FAIRNESS_ID_HEADER = "x-llm-d-inference-fairness-id";

  /** No objectives, no extra header: nothing changes. */
  public static final LlmdInterop DEFAULTS = new LlmdInterop(Map.of(), Map.of(), false);

  public LlmdInterop {
    objectiveClasses = Map.copyOf(Objects.requireNonNull(objectiveClasses, "objectiveClasses"));
    priorityClasses = Map.copyOf(Objects.requireNonNull(priorityClasses, "priorityClasses"));
  }

  /** The class an objective name stands for, or null when the section does not name it. */
  public @Nullable String classOf(String objective) {
    return objectiveClasses.get(objective);
  }

  /**
   * The class for an InferenceObjective {@code priority}: the one whose minimum is the highest at
   * or below it; below every minimum, the class with the lowest minimum (the most sheddable); null
   * when no class has a minimum.
   */
  public static @Nullable String classForPriority(Map<String, Integer> minimums, int priority) {
    String best = null;
    int bestMin = Integer.MIN_VALUE;
    String lowest = null;
    int lowestMin = Integer.MAX_VALUE;
    for (Map.Entry<String, Integer> e : minimums.entrySet()) {
      int min = e.getValue();
      if (min <= priority && (best == null || min > bestMin)) {
        best = e.getKey();
        bestMin = min;
      }
      if (lowest == null || min < lowestMin) {
        lowest = e.getKey();
        lowestMin = min;
      }
    }
    return best != null ? best : lowest;
  }
}
