package io.sluice.core.estimate;

/**
 * What a request body says about the work it spawns beyond its own tokens (docs/estimation.md,
 * Fan-out): read by the body scan, priced by the pool ({@code pools.<name>.fanout}).
 *
 * @param tools tool / function definitions in the body ({@code tools}, and OpenAI chat's legacy
 *     {@code functions}), {@code >= 0}
 * @param toolChoiceForced {@code tool_choice} forces a tool call: OpenAI {@code "required"} or a
 *     named function (legacy {@code function_call: {name}}), Responses {@code "required"} or a
 *     named tool, Anthropic {@code {"type": "any"}} or {@code {"type": "tool"}}
 * @param parallelToolCalls tools are present, not turned off ({@code tool_choice} {@code none}),
 *     and the model may call several at once: OpenAI chat and Responses unless {@code
 *     parallel_tool_calls: false}, Anthropic unless {@code tool_choice.disable_parallel_tool_use:
 *     true}
 */
public record FanOut(int tools, boolean toolChoiceForced, boolean parallelToolCalls) {
  /** No tools: nothing beyond the request's own tokens. */
  public static final FanOut NONE = new FanOut(0, false, false);

  public FanOut {
    if (tools < 0) {
      throw new IllegalArgumentException("tools: " + tools + " (expected: >= 0)");
    }
  }
}
