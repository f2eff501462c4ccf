package io.sluice.config;

import java.util.List;

/** A config that cannot be used; carries every error found, each with its YAML path. */
public final class ConfigException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final transient List<String> errors;

  public ConfigException(List<String> errors) {
    super(String.join("\n", errors));
    this.errors = List.copyOf(errors);
  }

  public List<String> errors() {
    return errors;
  }
}
