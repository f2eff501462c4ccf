package io.sluice.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.core.session.Signals;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A signal read only beside another ({@code ConfigSection.signalsBeside}): with telemetry on, W3C
 * {@code tracestate} is not even looked up for a request without a {@code traceparent}, and is read
 * as before beside one.
 */
class SignalsBesideTest {
  private static final String TRACEPARENT =
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  /** The request's headers, and every header name looked up. */
  private static final class Counting implements SignalSource {
    final SignalRequest request = new SignalRequest();
    final List<String> asked = new ArrayList<>();

    @Override
    public @Nullable String metadata(String key) {
      return request.metadata(key);
    }

    @Override
    public @Nullable String header(String name) {
      asked.add(name);
      return request.header(name);
    }

    @Override
    public @Nullable String dynamicMetadata(String namespace, List<String> path) {
      return null;
    }

    @Override
    public @Nullable String attribute(String expression) {
      return null;
    }

    @Override
    public @Nullable String path() {
      return request.path;
    }
  }

  private static RequestResolver telemetryOn() {
    return new RequestResolver(
        ConfigLoader.parse(
            """
            pools: {p: {capacity: 100}}
            classes: {c: {rank: 0}}
            routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
            telemetry: {enabled: true}
            """));
  }

  @Test
  void tracestate_isNotLookedUpWithoutATraceparent_andReadBesideOne() {
    RequestResolver r = telemetryOn();
    Counting alone = new Counting();
    alone.request.header("tracestate", "vendor=1");
    Signals read = r.resolve(alone, 0).signals();
    assertThat(read.get("tracestate")).isNull();
    assertThat(alone.asked).contains("traceparent").doesNotContain("tracestate");

    Counting both = new Counting();
    both.request.header("traceparent", TRACEPARENT).header("tracestate", "vendor=1");
    Signals beside = r.resolve(both, 0).signals();
    assertThat(beside.get("traceparent")).isEqualTo(TRACEPARENT);
    assertThat(beside.get("tracestate")).isEqualTo("vendor=1");
  }
}
