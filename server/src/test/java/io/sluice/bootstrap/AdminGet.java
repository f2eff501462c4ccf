package io.sluice.bootstrap;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/** The bootstrap tests' GET on a running server's admin port (127.0.0.1). */
final class AdminGet {
  private AdminGet() {}

  /** The body of {@code GET http://127.0.0.1:<port><path>}. */
  static String get(int port, String path) throws Exception {
    return HttpClient.newHttpClient()
        .send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }
}
