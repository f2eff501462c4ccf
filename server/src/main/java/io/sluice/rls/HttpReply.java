package io.sluice.rls;

/** What an admin HTTP handler answers; the server that mounts it writes it out. */
public record HttpReply(int status, String contentType, String body) {
  static HttpReply text(int status, String body) {
    return new HttpReply(status, "text/plain; charset=utf-8", body);
  }

  static HttpReply json(int status, String body) {
    return new HttpReply(status, "application/json", body);
  }
}
