package io.sluice.core.estimate;

import java.nio.charset.StandardCharsets;
import java.util.Random;

/**
 * Seeded random JSON answers of the shapes an upstream sends (OpenAI, Responses, Anthropic usage,
 * details, duplicates), with counts of every JSON type, escaped and non-ASCII strings and nesting;
 * and damaged copies (cut, a byte changed, a trailing comma, garbage after the root, a BOM).
 */
final class RandomAnswers {
  private RandomAnswers() {}

  private static final String[] USAGE_FIELDS = {
    "prompt_tokens",
    "completion_tokens",
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "total_tokens",
    "cached_tokens",
    "prompt_tokens_details",
    "input_tokens_details",
    "reasoning_tokens"
  };

  private static final String[] KEYS = {
    "id",
    "object",
    "model",
    "choices",
    "message",
    "content",
    "usage",
    "created",
    "x",
    "",
    "us\\u0061ge",
    "caf\u00e9",
    "usage ",
    "Usage"
  };

  private static final String[] TEXTS = {
    "",
    "hello",
    "caf\u00e9",
    "\u65e5\u672c",
    "\ud83d\ude00",
    "a\\nb",
    "\\\"q\\\"",
    "\\\\",
    "\\/",
    "\\u00e9",
    "\\ud83d\\ude00",
    "\\ud800",
    "tab\\tend",
    "\\b\\f\\r",
    "{\\\"usage\\\":1}",
    "usage",
    "}",
    "]",
    ",",
    ":"
  };

  private static final String[] NUMBERS = {
    "0",
    "7",
    "412",
    "-3",
    "-0",
    "1.5",
    "2e3",
    "1E+2",
    "0.0",
    "123456789012345678",
    "1234567890123456789",
    "99999999999999999999",
    "-12345678901234567890",
    "3.0e-2"
  };

  private static final String[] SPACES = {"", "", "", " ", "\n", "\t", "\r\n  "};

  /** One answer: a JSON object, usually with a usage object among other members. */
  static byte[] answer(Random r) {
    StringBuilder b = new StringBuilder();
    b.append(ws(r)).append('{');
    int members = r.nextInt(6);
    boolean usageDone = false;
    for (int i = 0; i < members || !usageDone && r.nextInt(5) > 0; i++) {
      if (i > 0) {
        b.append(ws(r)).append(',');
      }
      b.append(ws(r));
      if ((!usageDone && (r.nextInt(3) == 0 || i >= members - 1)) || r.nextInt(8) == 0) {
        usageDone = true;
        b.append("\"usage\"").append(ws(r)).append(':').append(ws(r));
        if (r.nextInt(8) == 0) {
          value(r, b, 2);
        } else {
          usage(r, b);
        }
      } else {
        b.append(string(r, KEYS)).append(ws(r)).append(':').append(ws(r));
        value(r, b, 3);
      }
      if (i > 20) {
        break;
      }
    }
    b.append(ws(r)).append('}').append(ws(r));
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static void usage(Random r, StringBuilder b) {
    b.append('{');
    int n = r.nextInt(7);
    for (int i = 0; i < n; i++) {
      if (i > 0) {
        b.append(',').append(ws(r));
      }
      String name = USAGE_FIELDS[r.nextInt(USAGE_FIELDS.length)];
      b.append('"').append(name).append("\":").append(ws(r));
      if (name.endsWith("_details") && r.nextInt(4) > 0) {
        b.append('{');
        int m = r.nextInt(4);
        for (int k = 0; k < m; k++) {
          if (k > 0) {
            b.append(',');
          }
          b.append(r.nextBoolean() ? "\"cached_tokens\":" : "\"audio_tokens\":");
          count(r, b);
        }
        b.append('}');
      } else {
        count(r, b);
      }
    }
    b.append(ws(r)).append('}');
  }

  private static void count(Random r, StringBuilder b) {
    switch (r.nextInt(10)) {
      case 0 -> b.append(string(r, TEXTS));
      case 1 -> b.append(r.nextBoolean() ? "null" : r.nextBoolean() ? "true" : "false");
      case 2 -> b.append(r.nextBoolean() ? "{\"cached_tokens\":5}" : "[1,2]");
      case 3 -> b.append(NUMBERS[r.nextInt(NUMBERS.length)]);
      default -> b.append(r.nextInt(r.nextBoolean() ? 10 : 100_000));
    }
  }

  private static void value(Random r, StringBuilder b, int depth) {
    int kind = r.nextInt(depth > 0 ? 7 : 4);
    switch (kind) {
      case 0 -> b.append(string(r, TEXTS));
      case 1 -> b.append(NUMBERS[r.nextInt(NUMBERS.length)]);
      case 2 -> b.append(r.nextBoolean() ? "true" : r.nextBoolean() ? "false" : "null");
      case 3 -> b.append(r.nextInt(1000));
      case 4, 5 -> {
        b.append('{');
        int n = r.nextInt(4);
        for (int i = 0; i < n; i++) {
          if (i > 0) {
            b.append(',').append(ws(r));
          }
          b.append(string(r, KEYS)).append(':');
          if (r.nextInt(4) == 0) {
            usage(r, b);
          } else {
            value(r, b, depth - 1);
          }
        }
        b.append('}');
      }
      default -> {
        b.append('[');
        int n = r.nextInt(4);
        for (int i = 0; i < n; i++) {
          if (i > 0) {
            b.append(',').append(ws(r));
          }
          value(r, b, depth - 1);
        }
        b.append(']');
      }
    }
  }

  private static String string(Random r, String[] pool) {
    StringBuilder s = new StringBuilder("\"");
    for (int i = r.nextInt(3); i >= 0; i--) {
      s.append(pool[r.nextInt(pool.length)]);
    }
    return s.append('"').toString();
  }

  private static String ws(Random r) {
    return SPACES[r.nextInt(SPACES.length)];
  }

  private static final byte[] DAMAGE = {
    ',', '}', ']', '{', '[', '"', '\\', ':', ' ', 0, 0x1f, (byte) 0xff, (byte) 0xc3, 'x', '0'
  };

  /** {@code body} as it is (half the time) or damaged one way. */
  static byte[] damaged(Random r, byte[] body) {
    if (r.nextBoolean() || body.length < 2) {
      return body;
    }
    byte[] b = body.clone();
    switch (r.nextInt(6)) {
      case 0 -> {
        return java.util.Arrays.copyOf(b, r.nextInt(b.length)); // cut
      }
      case 1 -> b[r.nextInt(b.length)] = DAMAGE[r.nextInt(DAMAGE.length)];
      case 2 -> {
        String s = new String(b, StandardCharsets.UTF_8);
        int at = s.lastIndexOf('}', s.length() - 1 - r.nextInt(Math.max(1, s.length() / 2)));
        return at < 0 ? b : (s.substring(0, at) + "," + s.substring(at)).getBytes(UTF8);
      }
      case 3 -> {
        return (new String(b, StandardCharsets.UTF_8) + "{garbage,").getBytes(UTF8);
      }
      case 4 -> {
        return ("\uFEFF" + new String(b, StandardCharsets.UTF_8)).getBytes(UTF8);
      }
      default -> {
        int at = r.nextInt(b.length);
        byte[] longer = new byte[b.length + 1];
        System.arraycopy(b, 0, longer, 0, at);
        longer[at] = DAMAGE[r.nextInt(DAMAGE.length)];
        System.arraycopy(b, at, longer, at + 1, b.length - at);
        return longer;
      }
    }
    return b;
  }

  private static final java.nio.charset.Charset UTF8 = StandardCharsets.UTF_8;
}
