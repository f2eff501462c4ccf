package io.sluice.core.estimate;

import org.jspecify.annotations.Nullable;

/**
 * Why a member of a body has no reading Sluice shares with the engine (null: it has one); fixed
 * texts only, never the client's value. Part of {@link BodyScan}, made only when a member has no
 * such reading; one per request, not thread-safe.
 */
final class Unreadable {
  // the members, as BodyScan#bad names them
  static final int MODEL = 0;
  static final int STREAM = 1;
  static final int MAX_TOKENS = 2;
  static final int MAX_COMPLETION_TOKENS = 3;
  static final int MAX_OUTPUT_TOKENS = 4;
  static final int N = 5;
  static final int BEST_OF = 6;
  static final int TOOLS = 7;
  static final int FUNCTIONS = 8;
  static final int PARALLEL_TOOL_CALLS = 9;

  @Nullable String model;
  @Nullable String stream;
  @Nullable String maxTokens;
  @Nullable String maxCompletionTokens;
  @Nullable String maxOutputTokens;
  @Nullable String n;
  @Nullable String bestOf;
  @Nullable String tools;
  @Nullable String functions;
  @Nullable String parallelToolCalls;

  /**
   * Why the request is refused {@code invalid_request}: the first member {@code format} uses that
   * has no reading Sluice shares with the engine; null when every one has (or the format is not
   * known: Sluice does not refuse members of an API it does not read).
   */
  @Nullable String invalid(@Nullable RequestFormat format) {
    if (format == null) {
      return null;
    }
    return switch (format) { // the first reason in the format's order; no array per request
      case OPENAI_CHAT ->
          or(
              or(or(model, stream), or(maxCompletionTokens, maxTokens)),
              or(or(n, tools), or(functions, parallelToolCalls)));
      case OPENAI_COMPLETIONS -> or(or(model, stream), or(or(maxTokens, n), bestOf));
      case OPENAI_RESPONSES ->
          or(or(model, stream), or(or(maxOutputTokens, tools), parallelToolCalls));
      case ANTHROPIC_MESSAGES -> or(or(model, stream), or(maxTokens, tools));
      case OPENAI_EMBEDDINGS -> model;
      case AUTO -> null;
    };
  }

  /** Why {@code member} (one of the constants) has no shared reading; null: it has one. */
  void set(int member, @Nullable String why) {
    switch (member) {
      case MODEL -> model = why;
      case STREAM -> stream = why;
      case MAX_TOKENS -> maxTokens = why;
      case MAX_COMPLETION_TOKENS -> maxCompletionTokens = why;
      case MAX_OUTPUT_TOKENS -> maxOutputTokens = why;
      case N -> n = why;
      case BEST_OF -> bestOf = why;
      case TOOLS -> tools = why;
      case FUNCTIONS -> functions = why;
      case PARALLEL_TOOL_CALLS -> parallelToolCalls = why;
      default -> throw new IllegalArgumentException("member " + member);
    }
  }

  private static @Nullable String or(@Nullable String first, @Nullable String then) {
    return first != null ? first : then;
  }
}
