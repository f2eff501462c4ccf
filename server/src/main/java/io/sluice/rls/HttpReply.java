package io.sluice.rls;

import org.jspecify.annotations.Nullable;

/** What an admin HTTP handler answers; the server that mounts it writes it out. */
public record HttpReply(int status, String contentType, @Nullable String body) {
  static HttpReply text(int status, @Nullable String body) {
    return new HttpReply(status, "text/plain; charset=utf-8", body);
  }

  static HttpReply json(int status, String body) {
    return new HttpReply(status, "application/json", body);
  }
}
