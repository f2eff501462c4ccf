package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;

import com.sun.net.httpserver.HttpExchange;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The parts of a stand-in for Envoy's loopback listener that intake's dispatch tests share: the
 * dispatched HTTP request as Envoy's headers, its ext_proc decision (headers, then the buffered
 * body unless the headers were answered), and a refusal written back as Sluice answered it.
 */
final class LoopbackRelay {
  private LoopbackRelay() {}

  /** The request's pseudo-headers and headers (lower-case names), as Envoy hands them on. */
  static Map<String, String> envoyHeaders(HttpExchange ex) {
    Map<String, String> h = new LinkedHashMap<>();
    h.put(":method", ex.getRequestMethod());
    h.put(":path", ex.getRequestURI().getRawPath());
    h.put(":authority", "127.0.0.1");
    ex.getRequestHeaders().forEach((k, v) -> h.put(k.toLowerCase(), v.get(0)));
    return h;
  }

  /** The request's body as text. */
  static String bodyOf(HttpExchange ex) throws IOException {
    return new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
  }

  /** Sluice's answer to the request on {@code c}: at its headers, else at its body. */
  static ProcessingResponse decide(ExtProcTestClient.Call c, Map<String, String> h, String reqBody)
      throws InterruptedException {
    ProcessingResponse r = c.send(headers(h, false, BodySendMode.BUFFERED, BodySendMode.NONE));
    return r.hasImmediateResponse() ? r : c.send(body(reqBody));
  }

  /** Writes Sluice's refusal back as the listener's answer, and ends the ext_proc stream. */
  static void refuse(HttpExchange ex, ImmediateResponse ir, ExtProcTestClient.Call c)
      throws IOException {
    ExtProcServerTestBase.headersOf(ir).forEach((k, v) -> ex.getResponseHeaders().add(k, v));
    byte[] b = ir.getBody().toByteArray();
    ex.sendResponseHeaders(ir.getStatus().getCodeValue(), b.length == 0 ? -1 : b.length);
    ex.getResponseBody().write(b);
    c.halfClose();
  }
}
