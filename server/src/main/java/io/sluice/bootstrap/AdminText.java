package io.sluice.bootstrap;

import java.nio.charset.StandardCharsets;

/** The admin port's text: the query string's parameters and the {@code GET /} index. */
final class AdminText {
  private AdminText() {}

  /** {@code GET /}: every route with what it answers (text, or JSON with {@code ?format=json}). */
  static AdminHttpServer.Reply index(java.util.Map<String, String> routes, String rawQuery) {
    if ("json".equals(query(rawQuery).get("format"))) {
      StringBuilder sb = new StringBuilder("{\"endpoints\": [");
      String sep = "\n  ";
      for (var e : routes.entrySet()) {
        sb.append(sep)
            .append("{\"path\": \"")
            .append(jsonEscape(e.getKey()))
            .append("\", \"description\": \"")
            .append(jsonEscape(e.getValue()))
            .append("\"}");
        sep = ",\n  ";
      }
      return AdminHttpServer.Reply.json(200, sb.append("\n]}\n").toString());
    }
    int width = routes.keySet().stream().mapToInt(String::length).max().orElse(0);
    StringBuilder sb = new StringBuilder("Sluice admin endpoints:\n");
    for (var e : routes.entrySet()) {
      sb.append("  ")
          .append(e.getKey())
          .append(" ".repeat(width - e.getKey().length() + 2))
          .append(e.getValue())
          .append('\n');
    }
    return AdminHttpServer.Reply.text(200, sb.toString());
  }

  private static String jsonEscape(String s) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20) {
        sb.append(String.format(java.util.Locale.ROOT, "\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.toString();
  }

  /** A query string that does not decode (a bad {@code %} escape): the client's error, a 400. */
  static final class BadQuery extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    BadQuery(IllegalArgumentException cause) {
      super(cause.getMessage(), cause);
    }
  }

  /**
   * The query string's parameters (first value of each; names and values URL-decoded); a {@link
   * BadQuery} when an escape does not decode.
   */
  static java.util.Map<String, String> query(String rawQuery) {
    java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
    if (rawQuery == null || rawQuery.isEmpty()) {
      return out;
    }
    for (String pair : rawQuery.split("&", -1)) {
      if (pair.isEmpty()) {
        continue; // "a=1&&b=2", a trailing "&"
      }
      int eq = pair.indexOf('=');
      String k = eq < 0 ? pair : pair.substring(0, eq);
      String v = eq < 0 ? "" : pair.substring(eq + 1);
      try {
        out.putIfAbsent(
            java.net.URLDecoder.decode(k, StandardCharsets.UTF_8),
            java.net.URLDecoder.decode(v, StandardCharsets.UTF_8));
      } catch (IllegalArgumentException e) {
        throw new BadQuery(e);
      }
    }
    return out;
  }
}
