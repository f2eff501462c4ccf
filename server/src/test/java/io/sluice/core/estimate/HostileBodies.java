package io.sluice.core.estimate;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * Request bodies a Python engine and a Java reader may read differently, from a seed: the members
 * Sluice reads with lax-mode values (numeric strings, floats, NaN, booleans, huge and negative
 * numbers), duplicates, case variants and escaped spellings of their names, NaN elsewhere, deep
 * nesting, data after the root, JSON in UTF-16, encoded surrogates, a byte order mark.
 */
final class HostileBodies {
  /** One body and the format it is sent as. */
  record Body(RequestFormat format, byte[] bytes) {
    @Override
    public String toString() {
      return format + " " + new String(bytes, StandardCharsets.ISO_8859_1);
    }
  }

  static final String[] INTS = {
    "8",
    "\"8\"",
    "8.0",
    "8.5",
    "NaN",
    "Infinity",
    "-Infinity",
    "\" 8 \"",
    "\"1_000\"",
    "true",
    "false",
    "-3",
    "0",
    "1e2",
    "1E400",
    "99999999999999999999999",
    "\"8.0\"",
    "\"0x10\"",
    "null",
    "[]",
    "{}",
    "\"\\u00a08\"",
    "-0.0",
    "\"+8\"",
    "1.0000000000000001",
    "200",
    "3",
    "\"3\"",
    "129",
    "128",
    "\"\"",
    "\"8.\"",
    "9007199254740993.0",
    "\"\\t16\\n\"",
    "\"-0\"",
    "2.0e1",
    "16"
  };
  static final String[] BOOLS = {
    "true",
    "false",
    "\"true\"",
    "\"yes\"",
    "\"Off\"",
    "1",
    "0",
    "2",
    "\"maybe\"",
    "null",
    "0.0",
    "1.0",
    "NaN",
    "[]",
    "\"TRUE\""
  };
  static final String[] MODELS = {
    "\"gpt-4o\"", "\"llama-3\"", "5", "null", "[\"a\"]", "\"claude-3\"", "true", "\"gpt-3.5-turbo\""
  };
  static final String[] LISTS = {
    "[]",
    "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]",
    "[{\"name\":\"a\"},{\"name\":\"b\"}]",
    "[1,2,3]",
    "{}",
    "\"x\"",
    "null"
  };
  static final String[] OTHERS = {
    "\"temperature\":NaN",
    "\"temperature\":Infinity",
    "\"top_p\":-Infinity",
    "\"priority\":-100",
    "\"priority\":NaN",
    "\"Priority\":5",
    "\"Max_Tokens\":99",
    "\"MAX_TOKENS\":\"7\"",
    "\"N\":50",
    "\"STREAM\":true",
    "\"Model\":\"other\"",
    "\"metadata\":" + deep(70),
    "\"metadata\":" + deep(20),
    "\"user\":\"\\ud800\"",
    "\"x\":\"caf\u00e9\"",
    "\"logit_bias\":{\"50256\":-100}",
    "\"seed\":1e30"
  };

  private HostileBodies() {}

  static String deep(int depth) {
    return "[".repeat(depth) + "]".repeat(depth);
  }

  static List<Body> generate(long seed, int count) {
    Random r = new Random(seed);
    List<Body> out = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      out.add(one(r));
    }
    return out;
  }

  private static Body one(Random r) {
    RequestFormat[] formats = {
      RequestFormat.OPENAI_CHAT,
      RequestFormat.OPENAI_COMPLETIONS,
      RequestFormat.OPENAI_RESPONSES,
      RequestFormat.ANTHROPIC_MESSAGES
    };
    RequestFormat f = formats[r.nextInt(formats.length)];
    List<String> members = new ArrayList<>();
    members.add(
        switch (f) {
          case OPENAI_COMPLETIONS -> "\"prompt\":\"hello there\"";
          case OPENAI_RESPONSES -> "\"input\":\"hello there\"";
          default -> "\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]";
        });
    String[] names =
        switch (f) {
          case OPENAI_CHAT ->
              new String[] {
                "model",
                "stream",
                "max_tokens",
                "max_completion_tokens",
                "n",
                "tools",
                "functions",
                "parallel_tool_calls"
              };
          case OPENAI_COMPLETIONS -> new String[] {"model", "stream", "max_tokens", "n", "best_of"};
          case OPENAI_RESPONSES ->
              new String[] {"model", "stream", "max_output_tokens", "tools", "parallel_tool_calls"};
          default -> new String[] {"model", "stream", "max_tokens", "tools"};
        };
    int k = 1 + r.nextInt(6);
    for (int j = 0; j < k; j++) {
      if (r.nextInt(5) == 0) {
        members.add(OTHERS[r.nextInt(OTHERS.length)]);
        continue;
      }
      String name = names[r.nextInt(names.length)];
      int copies = r.nextInt(4) == 0 ? 2 + r.nextInt(2) : 1; // duplicates
      for (int c = 0; c < copies; c++) {
        members.add(key(name, r) + ":" + value(name, r));
      }
    }
    if (r.nextInt(3) == 0) {
      Collections.shuffle(members, r);
    }
    String json = "{" + String.join(",", members) + "}";
    int twist = r.nextInt(40);
    if (twist == 0) {
      json += " {}"; // data after the root
    } else if (twist == 1) {
      json = json.replace("{\"", "{\"temperature\":+Infinity,\"");
    } else if (twist == 2) {
      json = json.replace("{\"", "{\"temperature\":-INF,\"");
    }
    byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
    if (twist == 3) {
      bytes = json.replace("hello", "h\u00e9llo").getBytes(StandardCharsets.UTF_16LE);
    } else if (twist == 4) {
      bytes = json.getBytes(StandardCharsets.UTF_16LE); // ASCII only: also valid UTF-8
    } else if (twist == 5) {
      bytes = surrogate(json);
    } else if (twist == 6) {
      byte[] bom = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
      byte[] b = new byte[bom.length + bytes.length];
      System.arraycopy(bom, 0, b, 0, 3);
      System.arraycopy(bytes, 0, b, 3, bytes.length);
      bytes = b;
    }
    return new Body(f, bytes);
  }

  /** The body with an encoded UTF-16 surrogate (ED A0 80) in its prompt text. */
  private static byte[] surrogate(String json) {
    byte[] b = json.replace("hello", "hel@o").getBytes(StandardCharsets.UTF_8);
    String s = new String(b, StandardCharsets.ISO_8859_1);
    int at = s.indexOf('@');
    byte[] out = new byte[b.length + 2];
    System.arraycopy(b, 0, out, 0, at);
    out[at] = (byte) 0xED;
    out[at + 1] = (byte) 0xA0;
    out[at + 2] = (byte) 0x80;
    System.arraycopy(b, at + 1, out, at + 3, b.length - at - 1);
    return out;
  }

  /** A member's name: as is, or with its first letter escaped ({@code "\u006d..."}). */
  private static String key(String name, Random r) {
    if (r.nextInt(6) == 0) {
      return "\"\\u00" + Integer.toHexString(name.charAt(0)) + name.substring(1) + "\"";
    }
    return "\"" + name + "\"";
  }

  private static String value(String name, Random r) {
    String[] pool =
        switch (name) {
          case "model" -> MODELS;
          case "stream", "parallel_tool_calls" -> BOOLS;
          case "tools", "functions" -> LISTS;
          default -> INTS;
        };
    return pool[r.nextInt(pool.length)];
  }
}
