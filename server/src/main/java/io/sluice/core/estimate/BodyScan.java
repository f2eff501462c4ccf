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

  // what the body says about tools and how the model may call them: made at its first tool
  // member (toolScan), so a body without one makes none; null reads as a ToolScan never written
  private @Nullable ToolScan tools;

  // why members have no reading shared with the engine; null until one has none (most bodies)
  private @Nullable Unreadable bad;

  /** Tool and function definitions together. */
  int tools() {
    ToolScan t = tools;
    return t == null ? 0 : t.count();
  }

  /** What the body says about tools, for a tool member to write into: made at the first. */
  ToolScan toolScan() {
    ToolScan t = tools;
    if (t == null) {
      tools = t = new ToolScan();
    }
    return t;
  }

  /**
   * Why the request is refused {@code invalid_request} ({@link Unreadable#invalid}); null when
   * every member {@code format} uses has a reading shared with the engine.
   */
  @Nullable String invalid(@Nullable RequestFormat format) {
    Unreadable u = bad;
    return u == null ? null : u.invalid(format);
  }

  /**
   * Notes why {@code member} ({@link Unreadable}'s constants) has no reading shared with the
   * engine; null: it has one (a later duplicate member replaces an earlier one's note). Nothing is
   * made until a member has none.
   */
  void bad(int member, @Nullable String why) {
    Unreadable u = bad;
    if (u == null) {
      if (why == null) {
        return;
      }
      bad = u = new Unreadable();
    }
    u.set(member, why);
  }

  /** The fan-out the body declares, read as {@code format} reads it ({@link ToolScan#fanOut}). */
  FanOut fanOut(@Nullable RequestFormat format) {
    ToolScan t = tools;
    return t == null ? FanOut.NONE : t.fanOut(format); // as a ToolScan never written reads
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
