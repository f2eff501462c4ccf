package io.sluice.core.estimate;

import org.jspecify.annotations.Nullable;

/**
 * What the structural pass of {@link RequestBodyReader} learned about a body's tools: definitions
 * in {@code tools} / {@code functions}, and what {@code tool_choice}, {@code parallel_tool_calls}
 * and the legacy {@code function_call} say (short known words only, never the client's text). Part
 * of {@link BodyScan}; one per request, not thread-safe.
 */
final class ToolScan {
  int toolDefinitions;
  int functionDefinitions;
  @Nullable String toolChoice; // the string form: auto, none, required, other
  boolean toolChoiceObject;
  @Nullable String toolChoiceType; // the object form's type (auto, none, any, tool, function, ...)
  @Nullable String toolChoiceMode; // allowed_tools: auto or required
  boolean toolChoiceNamed; // the object has a non-null name
  boolean toolChoiceFunction; // the object has a non-null function
  boolean disableParallelToolUse; // Anthropic tool_choice.disable_parallel_tool_use: true
  boolean parallelToolCallsFalse; // parallel_tool_calls: false (lax, as pydantic reads it)
  boolean functionCallNamed; // legacy function_call: {name: ...}
  boolean functionCallNone; // legacy function_call: "none"

  /** Tool and function definitions together. */
  int count() {
    return toolDefinitions + functionDefinitions;
  }

  /**
   * The fan-out the body declares, read as {@code format} reads it; {@link FanOut#NONE} without
   * tools, or for a format without tools (completions, embeddings, unknown).
   */
  FanOut fanOut(@Nullable RequestFormat format) {
    int tools = count();
    if (tools == 0 || format == null) {
      return FanOut.NONE;
    }
    boolean forced;
    boolean none;
    boolean parallel;
    switch (format) {
      case OPENAI_CHAT, OPENAI_RESPONSES -> {
        String type = toolChoiceType;
        forced =
            "required".equals(toolChoice)
                || (toolChoiceObject
                    && (type == null
                        ? toolChoiceNamed || toolChoiceFunction
                        : !type.equals("auto")
                            && !type.equals("none")
                            && (!type.equals("allowed_tools")
                                || "required".equals(toolChoiceMode))))
                || (format == RequestFormat.OPENAI_CHAT && toolChoice == null && functionCallNamed);
        none =
            "none".equals(toolChoice)
                || (toolChoiceObject && "none".equals(type))
                || (format == RequestFormat.OPENAI_CHAT
                    && toolChoice == null
                    && !toolChoiceObject
                    && functionCallNone);
        parallel = !none && !parallelToolCallsFalse;
      }
      case ANTHROPIC_MESSAGES -> {
        String type = toolChoiceObject ? toolChoiceType : null;
        forced = "any".equals(type) || "tool".equals(type);
        none = "none".equals(type);
        parallel = !none && !disableParallelToolUse;
      }
      default -> {
        return FanOut.NONE;
      }
    }
    return new FanOut(tools, forced, parallel);
  }
}
