package io.sluice.core.estimate;

import com.knuddels.jtokkit.api.Encoding;
import org.jspecify.annotations.Nullable;

/**
 * Counts the output tokens of an answer from the text it streams (SSE deltas), for the accounting
 * of work in flight and for charging an answer whose end or usage was not seen. Text of a model
 * with a known BPE encoding is tokenized piece by piece (a delta is usually a whole token or a few,
 * so the sum stays within a few percent of the answer's count); other text is counted as its UTF-8
 * bytes over {@code bytesPerToken}, summed before dividing. A piece longer than {@link
 * #MAX_TOKENIZED_CHARS} is counted by bytes (bounded CPU per event).
 *
 * <p>One per response; not thread-safe.
 */
public final class OutputMeter {
  /** Characters of an answer given to the BPE tokenizer; the rest are counted at its ratio. */
  public static final int MAX_TOKENIZED_CHARS = 2048;

  private final @Nullable Encoding encoding;
  private final double bytesPerToken;
  private long bpeTokens;
  private long tokenizedChars;
  private long extrapolatedChars; // counted at bpeTokens / tokenizedChars
  private long bytes;

  OutputMeter(@Nullable Encoding encoding, double bytesPerToken) {
    if (!(bytesPerToken > 0)) {
      throw new IllegalArgumentException("bytesPerToken: " + bytesPerToken + " (expected: > 0)");
    }
    this.encoding = encoding;
    this.bytesPerToken = bytesPerToken;
  }

  /** A meter that counts every piece by its UTF-8 bytes. */
  public static OutputMeter bytes(double bytesPerToken) {
    return new OutputMeter(null, bytesPerToken);
  }

  /** Adds one streamed piece of the answer. */
  void text(String piece) {
    int n = piece.length();
    if (n == 0) {
      return;
    }
    if (encoding == null) {
      bytes += Utf8.length(piece);
    } else if (tokenizedChars + n <= MAX_TOKENIZED_CHARS) {
      bpeTokens += encoding.countTokensOrdinary(piece);
      tokenizedChars += n;
    } else {
      extrapolatedChars += n;
    }
  }

  /** Tokens counted so far. */
  public long tokens() {
    long extrapolated =
        extrapolatedChars == 0
            ? 0
            : tokenizedChars == 0
                ? TokenTally.ceil(extrapolatedChars / bytesPerToken)
                : TokenTally.ceil((double) extrapolatedChars * bpeTokens / tokenizedChars);
    return bpeTokens + extrapolated + TokenTally.ceil(bytes / bytesPerToken);
  }
}
