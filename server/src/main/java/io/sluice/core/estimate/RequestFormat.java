package io.sluice.core.estimate;

/** STUB: replaced by the estimator branch. */
public enum RequestFormat {
  OPENAI_CHAT,
  OPENAI_COMPLETIONS,
  OPENAI_RESPONSES,
  OPENAI_EMBEDDINGS,
  ANTHROPIC_MESSAGES,
  AUTO;

  public static RequestFormat fromConfigName(String name) {
    for (RequestFormat f : values()) {
      if (f.configName().equals(name)) {
        return f;
      }
    }
    throw new IllegalArgumentException("format: " + name + " (expected: one of ...)");
  }

  public String configName() {
    return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
  }

  public static RequestFormat fromPath(String path) {
    return AUTO;
  }
}
