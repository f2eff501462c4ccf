package io.sluice.core.estimate;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The prompt of a request body of a known format, tallied while {@link RequestBodyReader#scan}
 * meets it, so that the body is read once. It holds only when the tally is the one the walk (the
 * second pass) would make: each prompt member met once, after {@code model} (the encoding known),
 * not Responses' or embeddings' {@code input} (the scan reads its first element), the model the
 * same at the end. Anything else gives it up and the walk reads the body again, as before; a member
 * the walk would refuse (wrong type, too large) restarts the scan without it ({@link #RESTART}), so
 * that every body reads exactly as the two passes read it. One instance per request.
 */
final class ScanWalk {
  /** Read the body again as two passes: a prompt member failed while the scan read it. */
  @SuppressWarnings("StaticAssignmentOfThrowable") // preallocated and stackless, as ReadFailure
  static final class Restart extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private Restart() {
      super("restart", null, false, false);
    }
  }

  @SuppressWarnings("StaticAssignmentOfThrowable")
  static final Restart RESTART = new Restart();

  private final RequestFormat format;
  private final ModelEncodings encodings;
  private final TokenCountCache counts;
  private final EstimatorSettings settings;
  private @Nullable TokenTally tally;
  private @Nullable String model; // the tally's
  private boolean modelSeen;
  private boolean givenUp;
  private boolean sawInput;

  ScanWalk(
      RequestFormat format,
      ModelEncodings encodings,
      TokenCountCache counts,
      EstimatorSettings settings) {
    this.format = format;
    this.encodings = encodings;
    this.counts = counts;
    this.settings = settings;
  }

  RequestFormat format() {
    return format;
  }

  /** The model named by the bytes {@code b[from, to)} ({@link ModelEncodings#name}). */
  String modelName(byte[] b, int from, int to) {
    return encodings.name(b, from, to);
  }

  /** A top-level member that is no walked one: notes that {@code model} came (never tallied). */
  boolean sees(String name) {
    if (name.equals("model")) {
      modelSeen = true;
    }
    return false;
  }

  /** Whether {@code name} (its {@code nth} occurrence) is the format's to tally now. */
  boolean tallies(String name, int nth) {
    if (givenUp || !walkedIn(format, name)) {
      return false;
    }
    if (nth > 1) { // the walk reads the last of duplicates
      givenUp = true;
      return false;
    }
    return true;
  }

  /** Whether the member can be tallied here (else the walk reads it: given up). */
  boolean mayTally(String name, boolean unreadable) {
    if (unreadable || !modelSeen || name.equals("input")) {
      givenUp = true;
      return false;
    }
    return true;
  }

  void giveUp() {
    givenUp = true;
  }

  TokenTally tally(@Nullable String modelNow) {
    TokenTally t = tally;
    if (t == null) {
      t = newTally(modelNow);
      tally = t;
      model = modelNow;
    }
    return t;
  }

  void read(boolean input) {
    sawInput |= input;
  }

  boolean sawInput() {
    return sawInput;
  }

  /**
   * The reply priming of a prompt that was read ({@code sawInput}); returns {@code sawInput}.
   * Static: a body the plain read tallied ({@link ChatScan}) finishes without a {@link
   * RequestBodyReader}.
   */
  static boolean finish(
      EstimatorSettings settings, RequestFormat format, boolean sawInput, TokenTally tally) {
    if (sawInput
        && (format == RequestFormat.OPENAI_CHAT
            || format == RequestFormat.OPENAI_RESPONSES
            || format == RequestFormat.ANTHROPIC_MESSAGES)) {
      tally.fixed(settings.replyPrimingTokens());
    }
    return sawInput;
  }

  /** The tally the walk would make of the body ({@code finalModel} its model), or null: walk. */
  @Nullable TokenTally result(@Nullable String finalModel) {
    if (givenUp) {
      return null;
    }
    TokenTally t = tally;
    if (t == null) { // no prompt member with a value: the walk reads nothing either
      return newTally(finalModel);
    }
    return Objects.equals(model, finalModel) ? t : null;
  }

  private TokenTally newTally(@Nullable String m) {
    return new TokenTally(
        encodings.forModel(m), counts, settings.bytesPerToken(), settings.maxTokenizeChars());
  }

  /** Whether the walk reads top-level member {@code name} for {@code format}. */
  static boolean walkedIn(RequestFormat format, String name) {
    return switch (name) {
      case "messages" ->
          format == RequestFormat.OPENAI_CHAT || format == RequestFormat.ANTHROPIC_MESSAGES;
      case "tools" ->
          format == RequestFormat.OPENAI_CHAT
              || format == RequestFormat.ANTHROPIC_MESSAGES
              || format == RequestFormat.OPENAI_RESPONSES;
      case "functions" -> format == RequestFormat.OPENAI_CHAT;
      case "system" -> format == RequestFormat.ANTHROPIC_MESSAGES;
      case "instructions" -> format == RequestFormat.OPENAI_RESPONSES;
      case "prompt" -> format == RequestFormat.OPENAI_COMPLETIONS;
      case "input" ->
          format == RequestFormat.OPENAI_RESPONSES || format == RequestFormat.OPENAI_EMBEDDINGS;
      default -> false;
    };
  }
}
