package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonToken;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * What the structural pass of {@link RequestBodyReader} learned about the top level of a body, each
 * member read as a Python engine reads it ({@link LaxValue}; a duplicate member: the last one, as
 * Python's {@code json} keeps). A member with no reading Sluice shares with the engine is noted
 * (the {@code bad*} fields) and, when the resolved format uses it, refuses the request {@code
 * invalid_request} ({@link #invalid}). One per request; not thread-safe.
 */
final class BodyScan {
  /** Sentinel output-cap values. */
  static final long CAP_ABSENT = -1;

  static final long CAP_INVALID = -2;

  /** The most choices one request is counted for (OpenAI's own limit on {@code n} is 128). */
  static final int MAX_CHOICES = 128;

  boolean empty;
  @Nullable String model;
  boolean stream;
  long maxTokens = CAP_ABSENT;
  long maxCompletionTokens = CAP_ABSENT;
  long maxOutputTokens = CAP_ABSENT;
  // OpenAI's n (choices) and best_of (completions: candidates generated server-side), 1 if
  // absent or unreadable, at most MAX_CHOICES
  int n = 1;
  int bestOf = 1;
  boolean messages;
  boolean system;
  boolean instructions;
  boolean prompt;
  boolean input;
  @Nullable JsonToken inputFirstElement;
  boolean anthropicHint;
  boolean embeddingsHint;
  // fan-out (FanOut): definitions in tools / functions, and what tool_choice,
  // parallel_tool_calls and the legacy function_call say (short known words only, never the
  // client's text)
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

  // why a member has no reading shared with the engine (null: it has one); fixed texts only,
  // never the client's value
  @Nullable String badModel;
  @Nullable String badStream;
  @Nullable String badMaxTokens;
  @Nullable String badMaxCompletionTokens;
  @Nullable String badMaxOutputTokens;
  @Nullable String badN;
  @Nullable String badBestOf;
  @Nullable String badTools;
  @Nullable String badFunctions;
  @Nullable String badParallelToolCalls;

  /** Tool and function definitions together. */
  int tools() {
    return toolDefinitions + functionDefinitions;
  }

  /**
   * Why the request is refused {@code invalid_request}: the first member {@code format} uses that
   * has no reading Sluice shares with the engine; null when every one has (or the format is not
   * known: Sluice does not refuse members of an API it does not read).
   */
  @Nullable String invalid(@Nullable RequestFormat format) {
    if (format == null) {
      return null;
    }
    return switch (format) {
      case OPENAI_CHAT ->
          first(
              badModel,
              badStream,
              badMaxCompletionTokens,
              badMaxTokens,
              badN,
              badTools,
              badFunctions,
              badParallelToolCalls);
      case OPENAI_COMPLETIONS -> first(badModel, badStream, badMaxTokens, badN, badBestOf);
      case OPENAI_RESPONSES ->
          first(badModel, badStream, badMaxOutputTokens, badTools, badParallelToolCalls);
      case ANTHROPIC_MESSAGES -> first(badModel, badStream, badMaxTokens, badTools);
      case OPENAI_EMBEDDINGS -> badModel;
      case AUTO -> null;
    };
  }

  private static @Nullable String first(@Nullable String... reasons) {
    for (String r : reasons) {
      if (r != null) {
        return r;
      }
    }
    return null;
  }

  /** An output cap from its lax reading: a positive value, {@link #CAP_ABSENT} or invalid. */
  static long cap(long lax) {
    if (lax == LaxValue.ABSENT) {
      return CAP_ABSENT;
    }
    return lax > 0 ? lax : CAP_INVALID;
  }

  /** Why a cap's lax reading is refused, or null. */
  static @Nullable String badCap(String member, long lax) {
    return lax == LaxValue.ABSENT || lax > 0
        ? null
        : member + ": expected a positive integer (as the engine reads it)";
  }

  /**
   * A choice count ({@code n}, {@code best_of}) from its lax reading, at most {@link #MAX_CHOICES};
   * 1 when absent or below 1 (out of {@code 1..MAX_CHOICES} it is refused: {@link #badChoices}).
   */
  static int choices(long lax) {
    return lax >= 1 ? (int) Math.min(MAX_CHOICES, lax) : 1;
  }

  /** Why a choice count's lax reading is refused, or null. */
  static @Nullable String badChoices(String member, long lax) {
    return lax == LaxValue.ABSENT || (lax >= 1 && lax <= MAX_CHOICES)
        ? null
        : member + ": expected an integer from 1 to " + MAX_CHOICES + " (as the engine reads it)";
  }

  /**
   * The fan-out the body declares, read as {@code format} reads it; {@link FanOut#NONE} without
   * tools, or for a format without tools (completions, embeddings, unknown).
   */
  FanOut fanOut(@Nullable RequestFormat format) {
    int tools = tools();
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

  /** Resolves {@link RequestFormat#AUTO} from the keys; null when nothing matches. */
  @Nullable RequestFormat detect() {
    String m = model == null ? "" : model.toLowerCase(Locale.ROOT);
    if (messages) {
      return system || anthropicHint || m.startsWith("claude") || m.contains("anthropic")
          ? RequestFormat.ANTHROPIC_MESSAGES
          : RequestFormat.OPENAI_CHAT;
    }
    if (prompt) {
      return RequestFormat.OPENAI_COMPLETIONS;
    }
    if (input) {
      if (inputFirstElement == JsonToken.START_OBJECT) {
        return RequestFormat.OPENAI_RESPONSES;
      }
      if (inputFirstElement == JsonToken.VALUE_NUMBER_INT
          || inputFirstElement == JsonToken.START_ARRAY
          || embeddingsHint
          || m.contains("embed")) {
        return RequestFormat.OPENAI_EMBEDDINGS;
      }
      return RequestFormat.OPENAI_RESPONSES;
    }
    if (instructions) {
      return RequestFormat.OPENAI_RESPONSES;
    }
    return null;
  }
}
