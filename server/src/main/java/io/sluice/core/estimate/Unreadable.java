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
    return switch (format) {
      case OPENAI_CHAT ->
          first(
              model,
              stream,
              maxCompletionTokens,
              maxTokens,
              n,
              tools,
              functions,
              parallelToolCalls);
      case OPENAI_COMPLETIONS -> first(model, stream, maxTokens, n, bestOf);
      case OPENAI_RESPONSES -> first(model, stream, maxOutputTokens, tools, parallelToolCalls);
      case ANTHROPIC_MESSAGES -> first(model, stream, maxTokens, tools);
      case OPENAI_EMBEDDINGS -> model;
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
}
