package io.sluice.core.policy;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A class's degrade ladder ({@code classes.<name>.degrade}): the cheaper ways a request of the
 * class may run when it cannot run now as asked, tried in order before today's queue-or-refuse.
 *
 * <p>The ladder is tried when either trigger fires: the request cannot start now and its predicted
 * wait exceeds {@code waitAbove} (or it would be refused for want of capacity), or the capacity
 * free for its class has fallen below {@code headroomBelow} of the pool. The first rung that lets
 * it start at once wins; a rung never queues.
 *
 * @param waitAbove predicted wait above which a request that cannot start now is degraded (zero:
 *     this trigger is off)
 * @param headroomBelow fraction of the pool's capacity; below it, a request that could start is
 *     degraded anyway (0: this trigger is off)
 * @param ladder the rungs, in order (empty: no ladder)
 */
public record DegradePolicy(Duration waitAbove, double headroomBelow, List<Rung> ladder) {

  /** No ladder: the class is never degraded. */
  public static final DegradePolicy OFF = new DegradePolicy(Duration.ZERO, 0, List.of());

  public DegradePolicy {
    Objects.requireNonNull(waitAbove, "waitAbove");
    if (waitAbove.isNegative()) {
      throw new IllegalArgumentException("waitAbove: " + waitAbove + " (expected: >= 0s)");
    }
    if (!(headroomBelow >= 0 && headroomBelow <= 1)) {
      throw new IllegalArgumentException(
          "headroomBelow: " + headroomBelow + " (expected: 0.0 .. 1.0)");
    }
    ladder = List.copyOf(ladder);
  }

  /** Whether a ladder is configured and at least one trigger is on. */
  public boolean enabled() {
    return !ladder.isEmpty() && (waitAbove.compareTo(Duration.ZERO) > 0 || headroomBelow > 0);
  }

  /** One way to run a request more cheaply. */
  public sealed interface Rung permits Concise, Reroute {
    /** {@code concise} or {@code reroute}: the rung's name in metrics, headers and records. */
    String name();
  }

  /**
   * The evaluated concise-answer mode: the body's output cap ({@code max_tokens}, {@code
   * max_completion_tokens} or {@code max_output_tokens}, per format) clamped to {@code
   * maxOutputTokens}, optionally with the operator's system {@code instruction}; the request is
   * re-estimated and admitted if it now fits. Needs the request body (Envoy BUFFERED). {@code
   * capField}: the member added when the body sets no cap (null: by format, {@code max_tokens} or
   * {@code max_output_tokens}).
   */
  public record Concise(
      long maxOutputTokens, @Nullable String instruction, @Nullable String capField)
      implements Rung {
    public static final String NAME = "concise";

    public Concise {
      if (maxOutputTokens < 1) {
        throw new IllegalArgumentException(
            "maxOutputTokens: " + maxOutputTokens + " (expected: >= 1)");
      }
      if (instruction != null && instruction.isBlank()) {
        instruction = null;
      }
    }

    @Override
    public String name() {
      return NAME;
    }
  }

  /**
   * Another pool: admitted only if {@code pool} has room for the request now (counted against it),
   * sent there by setting the trusted routing {@code header} to {@code value} with {@code
   * clear_route_cache}, and/or by rewriting the body's {@code model}.
   */
  public record Reroute(
      String pool, @Nullable String header, @Nullable String value, @Nullable String model)
      implements Rung {
    public static final String NAME = "reroute";

    public Reroute {
      Objects.requireNonNull(pool, "pool");
      if ((header == null) != (value == null)) {
        throw new IllegalArgumentException(
            "header/value: " + header + "/" + value + " (expected: both or neither)");
      }
      if (header == null && model == null) {
        throw new IllegalArgumentException(
            "reroute: no header and no model (expected: header and value, or model, or both)");
      }
    }

    @Override
    public String name() {
      return NAME;
    }
  }
}
