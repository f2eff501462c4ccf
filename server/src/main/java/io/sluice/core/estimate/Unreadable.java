package io.sluice.core.estimate;

import org.jspecify.annotations.Nullable;

/**
 * Why a member of a body has no reading Sluice shares with the engine (null: it has one); fixed
 * texts only, never the client's value. Part of {@link BodyScan}; one per request, not thread-safe.
 */
final class Unreadable {
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

  private static @Nullable String or(@Nullable String first, @Nullable String then) {
    return first != null ? first : then;
  }
}
