package io.sluice.rls.config;

/** A config file or directory that cannot be loaded; the message starts with the file key. */
public final class RateLimitConfigException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RateLimitConfigException(String message) {
    super(message);
  }

  public RateLimitConfigException(String message, Throwable cause) {
    super(message, cause);
  }

  static RateLimitConfigException of(String fileKey, String error) {
    return new RateLimitConfigException(fileKey + ": " + error);
  }
}
