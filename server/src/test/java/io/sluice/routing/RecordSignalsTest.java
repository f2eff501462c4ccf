package io.sluice.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.config.ConfigLoader;
import io.sluice.core.session.Signals;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Signals a feature reads only for the decision record ({@code ConfigSection.recordSignals}):
 * correlation's request id and trace headers are read while records are written, and not even
 * looked up while they are not; with telemetry's export on, the span reads them whatever the log.
 */
class RecordSignalsTest {
  private static final String TRACEPARENT =
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  /** The request's headers, and every header name looked up. */
  private static final class Counting implements SignalSource {
    final SignalRequest request = new SignalRequest();
    final List<String> asked = new ArrayList<>();

    Counting() {
      request.header("x-request-id", "7f8e9d0c").header("traceparent", TRACEPARENT);
    }

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

  private static RequestResolver resolver(String telemetry) {
    return new RequestResolver(
        ConfigLoader.parse(
            """
            pools: {p: {capacity: 100}}
            classes: {c: {rank: 0}}
            routes: [{name: chat, match: {pathPrefix: /v1/chat}, pool: p, class: c}]
            """
                + telemetry));
  }

  @Test
  void correlationOnly_readsTheRequestIdWhileRecordsAreWritten_andNothingWhileNot() {
    RequestResolver r = resolver("telemetry: {correlation: true}\n");
    Counting logged = new Counting();
    Signals withRecords = r.resolve(logged, 0, true).signals();
    assertThat(withRecords.get("requestId")).isEqualTo("7f8e9d0c");
    assertThat(withRecords.get("traceparent")).isEqualTo(TRACEPARENT);

    Counting silent = new Counting();
    Signals without = r.resolve(silent, 0, false).signals();
    assertThat(without.get("requestId")).isNull();
    assertThat(without.get("traceparent")).isNull();
    assertThat(silent.asked).doesNotContain("x-request-id", "traceparent");
  }

  @Test
  void exportOn_readsThemWithoutRecordsToo() {
    RequestResolver r = resolver("telemetry: {enabled: true}\n");
    Counting silent = new Counting();
    Signals without = r.resolve(silent, 0, false).signals();
    assertThat(without.get("requestId")).isEqualTo("7f8e9d0c");
    assertThat(without.get("traceparent")).isEqualTo(TRACEPARENT);
  }
}
