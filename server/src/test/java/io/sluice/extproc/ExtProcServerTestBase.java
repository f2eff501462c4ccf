package io.sluice.extproc;

import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.time.Ticker;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** A real Sluice server on random ports with a raw ext_proc client, per test. */
abstract class ExtProcServerTestBase {
  protected SluiceServer server;
  protected ExtProcTestClient client;

  /** The policy YAML the server runs (ports 0, loopback). */
  protected abstract String policy();

  /** The server's ticker: the system's unless a test drives a fake one. */
  protected Ticker ticker() {
    return Ticker.system();
  }

  @BeforeEach
  void startServer() throws Exception {
    server = SluiceServer.start(ConfigLoader.parse(policy()), ticker(), Clock.systemUTC());
    client = new ExtProcTestClient(server.grpcPort());
  }

  @AfterEach
  void stopServer() throws Exception {
    client.close();
    server.close();
  }

  /** Request headers of a chat completion, plus {@code extra} name/value pairs. */
  static Map<String, String> chat(String... extra) {
    Map<String, String> h = new LinkedHashMap<>();
    h.put(":method", "POST");
    h.put(":path", "/v1/chat/completions");
    h.put(":authority", "llm.example.com");
    h.put("content-type", "application/json");
    h.put("x-request-id", "req-1");
    for (int i = 0; i + 1 < extra.length; i += 2) {
      h.put(extra[i], extra[i + 1]);
    }
    return h;
  }

  /** The headers an ImmediateResponse sets. */
  static Map<String, String> headersOf(ImmediateResponse ir) {
    Map<String, String> m = new LinkedHashMap<>();
    for (HeaderValueOption o : ir.getHeaders().getSetHeadersList()) {
      m.put(o.getHeader().getKey(), o.getHeader().getRawValue().toString(StandardCharsets.UTF_8));
    }
    return m;
  }

  /** One header of the response's ImmediateResponse, or null. */
  static String header(ProcessingResponse r, String key) {
    return headersOf(r.getImmediateResponse()).get(key);
  }
}
