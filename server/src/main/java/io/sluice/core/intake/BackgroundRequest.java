package io.sluice.core.intake;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * What intake reads of a request body: whether it asks for background mode (a top-level {@code
 * "background": true}, OpenAI Responses) and its {@code model}. A byte search first, so a body that
 * never names {@code background} is not parsed; then one pass over the top-level fields, nested
 * values skipped.
 */
public final class BackgroundRequest {
  private static final JsonFactory JSON =
      JsonFactory.builder()
          .streamReadConstraints(
              io.sluice.core.estimate.JsonBounds.depth(
                  io.sluice.core.estimate.JsonBounds.REQUEST_MAX_DEPTH))
          .build();
  private static final byte[] KEY = "\"background\"".getBytes(StandardCharsets.US_ASCII);

  /** The body asks for background mode ({@code model}: its model, or null). */
  public record Asked(@Nullable String model) {}

  private BackgroundRequest() {}

  /** Whether the body may ask for background mode (the key appears in it): cheap, no parse. */
  public static boolean mentions(byte[] b, int off, int len) {
    int end = off + len - KEY.length;
    outer:
    for (int i = off; i <= end; i++) {
      for (int k = 0; k < KEY.length; k++) {
        if (b[i + k] != KEY[k]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  /** The body's ask, or null when it does not ask for background mode (or is not a JSON object). */
  public static @Nullable Asked read(byte[] b, int off, int len) {
    if (!mentions(b, off, len)) {
      return null;
    }
    Scan s = scan(b, off, len);
    return s != null && s.background() ? new Asked(s.model()) : null;
  }

  /**
   * A request taken in for later without asking for background mode ({@code intake.whenLate}): its
   * model, or null when the body is not a JSON object (it cannot run as a background job).
   */
  static @Nullable Asked late(byte[] b, int off, int len) {
    Scan s = scan(b, off, len);
    return s == null ? null : new Asked(s.model());
  }

  private record Scan(boolean background, @Nullable String model) {}

  /** One pass over the top-level fields; null when the body is not a JSON object. */
  private static @Nullable Scan scan(byte[] b, int off, int len) {
    boolean background = false;
    String model = null;
    try (JsonParser p = JSON.createParser(b, off, len)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken v = p.nextToken();
        if ("background".equals(name)) {
          background = v == JsonToken.VALUE_TRUE;
        } else if ("model".equals(name) && v == JsonToken.VALUE_STRING) {
          model = p.getText();
        } else {
          p.skipChildren();
        }
      }
    } catch (IOException e) {
      return null; // the estimator already refused a body that does not parse
    }
    return new Scan(background, model);
  }
}
