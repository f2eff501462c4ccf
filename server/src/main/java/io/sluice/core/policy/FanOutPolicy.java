package io.sluice.core.policy;

import io.sluice.core.estimate.FanOut;

/**
 * {@code pools.<name>.fanout}: the work, in the pool's work units, a request spawns beyond its own
 * tokens (docs/estimation.md, Fan-out). All 0 ({@link #NONE}): a request costs its tokens only.
 *
 * @param perTool per tool / function definition in the body
 * @param toolChoiceRequired once when {@code tool_choice} forces a tool call
 * @param parallelToolCalls once when tools are present and parallel calls are allowed
 * @param perDeclaredCall per downstream call the trusted {@code fanout} signal declares (at most
 *     {@link #MAX_DECLARED_CALLS})
 */
public record FanOutPolicy(
    long perTool, long toolChoiceRequired, long parallelToolCalls, long perDeclaredCall) {
  public static final FanOutPolicy NONE = new FanOutPolicy(0, 0, 0, 0);

  /** The most downstream calls one request's {@code fanout} signal is counted for. */
  public static final int MAX_DECLARED_CALLS = 1024;

  /** The largest value of one key (keeps every sum far from overflow). */
  public static final long MAX_WORK = 1L << 40;

  public FanOutPolicy {
    check("perTool", perTool);
    check("toolChoiceRequired", toolChoiceRequired);
    check("parallelToolCalls", parallelToolCalls);
    check("perDeclaredCall", perDeclaredCall);
  }

  private static void check(String key, long v) {
    if (v < 0 || v > MAX_WORK) {
      throw new IllegalArgumentException(
          "fanout." + key + ": " + v + " (expected: work units 0.." + MAX_WORK + ")");
    }
  }

  /** Work units from the body's tool definitions. */
  public long tools(FanOut f) {
    return perTool * f.tools();
  }

  /** Work units from a forced tool choice. */
  public long toolChoice(FanOut f) {
    return f.toolChoiceForced() ? toolChoiceRequired : 0;
  }

  /** Work units from parallel tool calls being allowed. */
  public long parallel(FanOut f) {
    return f.parallelToolCalls() ? parallelToolCalls : 0;
  }

  /**
   * Work units of {@code declaredCalls} downstream calls (clamped to 0..{@value
   * #MAX_DECLARED_CALLS}).
   */
  public long declared(int declaredCalls) {
    return perDeclaredCall * Math.max(0, Math.min(MAX_DECLARED_CALLS, declaredCalls));
  }

  /**
   * The fan-out work of a request: every source summed (each at most 2^40 × the body's size, so the
   * sum saturates rather than overflows).
   */
  public long workUnits(FanOut f, int declaredCalls) {
    long sum = 0;
    for (int i = 0; i < 4; i++) { // the parts in order, no array per request
      long part =
          switch (i) {
            case 0 -> tools(f);
            case 1 -> toolChoice(f);
            case 2 -> parallel(f);
            default -> declared(declaredCalls);
          };
      sum += part;
      if (sum < 0 || part < 0) {
        return Long.MAX_VALUE / 4;
      }
    }
    return Math.min(sum, Long.MAX_VALUE / 4);
  }
}
