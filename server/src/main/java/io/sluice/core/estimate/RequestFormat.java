package io.sluice.core.estimate;

import java.util.Locale;

/** The API shape of an LLM request body, which decides where the prompt and the output cap are. */
public enum RequestFormat {
  OPENAI_CHAT("openai-chat"),
  OPENAI_COMPLETIONS("openai-completions"),
  OPENAI_RESPONSES("openai-responses"),
  OPENAI_EMBEDDINGS("openai-embeddings"),
  ANTHROPIC_MESSAGES("anthropic-messages"),
  /** Resolve per request: from the HTTP path, else from the JSON keys of the body. */
  AUTO("auto");

  private static final String EXPECTED =
      "openai-chat, openai-completions, openai-responses, openai-embeddings, anthropic-messages,"
          + " auto";

  private final String configName;

  RequestFormat(String configName) {
    this.configName = configName;
  }

  /**
   * Parses a config name such as {@code openai-chat}; case-insensitive.
   *
   * @throws IllegalArgumentException "format: &lt;v&gt; (expected: one of ...)"
   */
  public static RequestFormat fromConfigName(String name) {
    if (name != null) {
      String normalized = name.trim().toLowerCase(Locale.ROOT);
      for (RequestFormat format : values()) {
        if (format.configName.equals(normalized)) {
          return format;
        }
      }
    }
    throw new IllegalArgumentException("format: " + name + " (expected: one of " + EXPECTED + ")");
  }

  /** The name used in configuration, e.g. {@code openai-chat}. */
  public String configName() {
    return configName;
  }

  /**
   * Resolves a format from the HTTP {@code :path} by its suffix, ignoring the query string and a
   * trailing slash, so that prefixed routes ({@code /openai/v1/chat/completions}, Azure's {@code
   * /openai/deployments/x/chat/completions}) resolve too.
   *
   * <ul>
   *   <li>{@code .../chat/completions} → {@link #OPENAI_CHAT}
   *   <li>{@code .../completions} → {@link #OPENAI_COMPLETIONS}
   *   <li>{@code .../responses} → {@link #OPENAI_RESPONSES}
   *   <li>{@code .../embeddings} → {@link #OPENAI_EMBEDDINGS}
   *   <li>{@code .../v1/messages} (not under {@code /threads/}) → {@link #ANTHROPIC_MESSAGES}
   * </ul>
   *
   * @return the format, or {@link #AUTO} when the path is null or not recognised
   */
  public static RequestFormat fromPath(String path) {
    if (path == null) {
      return AUTO;
    }
    int end = path.length();
    int query = path.indexOf('?');
    if (query >= 0) {
      end = query;
    }
    int fragment = path.indexOf('#');
    if (fragment >= 0 && fragment < end) {
      end = fragment;
    }
    while (end > 1 && path.charAt(end - 1) == '/') {
      end--;
    }
    String p = path.substring(0, end).toLowerCase(Locale.ROOT);
    if (p.endsWith("/chat/completions")) {
      return OPENAI_CHAT;
    }
    if (p.endsWith("/completions")) {
      return OPENAI_COMPLETIONS;
    }
    if (p.endsWith("/responses")) {
      return OPENAI_RESPONSES;
    }
    if (p.endsWith("/embeddings")) {
      return OPENAI_EMBEDDINGS;
    }
    if (p.endsWith("/v1/messages") && !p.contains("/threads/")) {
      return ANTHROPIC_MESSAGES;
    }
    return AUTO;
  }
}
