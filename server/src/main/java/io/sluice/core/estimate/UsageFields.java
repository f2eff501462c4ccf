package io.sluice.core.estimate;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The token counts of the {@code usage} objects {@link UsageExtractor} read, merged field by field,
 * the latest value winning (OpenAI {@code prompt_tokens}/{@code completion_tokens}; Responses and
 * Anthropic {@code input_tokens}/{@code output_tokens} and Anthropic's cached input apart). A field
 * array holds one count per field, -1 for not seen. Not thread-safe.
 */
final class UsageFields {
  static final int PROMPT = 0;
  static final int COMPLETION = 1;
  static final int INPUT = 2;
  static final int OUTPUT = 3;
  static final int CACHE_CREATION = 4;
  static final int CACHE_READ = 5;
  static final int CACHED = 6; // cached_tokens of prompt_tokens_details / input_tokens_details
  static final int FIELDS = 7;

  private final long[] merged = newFields();

  /** A field array with nothing seen. */
  static long[] newFields() {
    long[] fields = new long[FIELDS];
    Arrays.fill(fields, -1);
    return fields;
  }

  /** The field of a {@code usage} member, or -1 for one that is not a token count read here. */
  static int fieldIndex(String name) {
    return switch (name) {
      case "prompt_tokens" -> PROMPT;
      case "completion_tokens" -> COMPLETION;
      case "input_tokens" -> INPUT;
      case "output_tokens" -> OUTPUT;
      case "cache_creation_input_tokens" -> CACHE_CREATION;
      case "cache_read_input_tokens" -> CACHE_READ;
      default -> -1;
    };
  }

  /** Whether {@code name} is a {@code usage} member whose object holds {@code cached_tokens}. */
  static boolean isDetails(String name) {
    return name.equals("prompt_tokens_details") || name.equals("input_tokens_details");
  }

  /** A token count, or -1 when the value is not a number (null counts as absent). */
  static long number(JsonParser p, JsonToken t) throws IOException {
    if (t == JsonToken.VALUE_NUMBER_INT) {
      if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
        return p.getBigIntegerValue().signum() > 0 ? Long.MAX_VALUE : 0;
      }
      return Math.max(0, p.getLongValue());
    }
    if (t == JsonToken.VALUE_NUMBER_FLOAT) {
      double d = p.getDoubleValue();
      return d > 0 ? (long) Math.min(d, (double) Long.MAX_VALUE) : 0;
    }
    if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
      p.skipChildren();
    }
    return -1;
  }

  /** The fields of the object {@code p} just entered, up to its end. */
  static long[] read(JsonParser p) throws IOException {
    long[] fields = newFields();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      int index = fieldIndex(name);
      JsonToken v = p.nextToken();
      if (index >= 0) {
        fields[index] = number(p, v);
      } else if (v == JsonToken.START_OBJECT && isDetails(name)) {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          boolean cached = p.currentName().equals("cached_tokens");
          JsonToken d = p.nextToken();
          if (cached) {
            fields[CACHED] = number(p, d);
          } else {
            p.skipChildren();
          }
        }
      } else {
        p.skipChildren();
      }
    }
    return fields;
  }

  /**
   * The merged fields themselves while nothing was merged into them (all -1), for a reader that
   * writes them in place and fills them with -1 again when it gives up ({@link UsageScan}); null
   * once something was.
   */
  long @Nullable [] blankFields() {
    for (long v : merged) {
      if (v >= 0) {
        return null;
      }
    }
    return merged;
  }

  /** Takes each field {@code fields} saw. */
  void merge(long[] fields) {
    for (int i = 0; i < FIELDS; i++) {
      if (fields[i] >= 0) {
        merged[i] = fields[i];
      }
    }
  }

  /** Output tokens reported: {@code completion_tokens}, else {@code output_tokens}, else 0. */
  long output() {
    return merged[COMPLETION] >= 0 ? merged[COMPLETION] : pos(merged[OUTPUT]);
  }

  /**
   * The usage merged so far, {@link Usage#NONE} when nothing was seen. Input tokens are {@code
   * prompt_tokens} when present, else {@code input_tokens + cache_creation_input_tokens +
   * cache_read_input_tokens}; cached input is {@code cached_tokens} of the details when present,
   * else {@code cache_read_input_tokens}.
   */
  Usage usage() {
    boolean any = false;
    for (long v : merged) {
      any |= v >= 0;
    }
    if (!any) {
      return Usage.NONE;
    }
    long input =
        merged[PROMPT] >= 0
            ? merged[PROMPT]
            : add(add(pos(merged[INPUT]), pos(merged[CACHE_CREATION])), pos(merged[CACHE_READ]));
    long cached = merged[CACHED] >= 0 ? merged[CACHED] : pos(merged[CACHE_READ]);
    return new Usage(input, output(), cached, true);
  }

  private static long pos(long v) {
    return Math.max(0, v);
  }

  private static long add(long a, long b) {
    long r = a + b;
    return r < 0 ? Long.MAX_VALUE : r;
  }
}
