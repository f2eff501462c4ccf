package io.sluice.rls.config;

import org.jspecify.annotations.Nullable;

/** A config file or directory that cannot be loaded; the message starts with the file key. */
public final class RateLimitConfigException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RateLimitConfigException(String message) {
    super(message);
  }

  public RateLimitConfigException(String message, Throwable cause) {
    super(message, cause);
  }

  /** The message, never null: both constructors take one. */
  @Override
  public String getMessage() {
    return java.util.Objects.requireNonNull(super.getMessage());
  }

  static RateLimitConfigException of(String fileKey, @Nullable String error) {
    return new RateLimitConfigException(fileKey + ": " + error);
  }
}
