package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.headers;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.micrometer.core.instrument.Counter;
import io.sluice.config.ConfigException;
import io.sluice.config.ConfigLoader;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 finding 5: a request decided at its headers without a trustworthy size is charged {@code
 * estimation.defaultInputTokens} (not 0), and STREAMED request chunks are held to {@code
 * limits.maxBodyBytes} (413 on the chunk that crosses it, permit released).
 */
class HeadersOnlyDecisionTest extends ExtProcServerTestBase {
  private static final String CONFIG =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      limits: {maxBodyBytes: 4KiB}
      estimation: {defaultInputTokens: 777}
      pools: {gpu: {capacity: 100000}}
      classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 100, maxOutputTokens: 1000}}
      signals: {tenant: [{metadata: x-sluice-tenant}]}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      """;

  @Override
  protected String policy() {
    return CONFIG;
  }

  private static ProcessingRequest chunk(int bytes, boolean eos) {
    return ProcessingRequest.newBuilder()
        .setRequestBody(
            HttpBody.newBuilder()
                .setBody(ByteString.copyFromUtf8("x".repeat(bytes)))
                .setEndOfStream(eos))
        .build();
  }

  private static Struct metadata(ProcessingResponse r) {
    return r.getDynamicMetadata().getFieldsOrThrow("sluice").getStructValue();
  }

  private double fallbacks(String cause) {
    Counter c = server.registry().find("sluice.estimate.fallbacks").tag("cause", cause).counter();
    return c == null ? 0 : c.count();
  }

  private int inFlight() {
    return server
        .runtime()
        .controller()
        .pool("gpu")
        .snapshot(server.runtime().ticker().nanos())
        .requestsInFlight();
  }

  @Test
  void streamedBodyWithoutContentLength_chargedTheDefaultInputEstimate() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    ProcessingResponse r =
        c.send(headers(chat(), false, BodySendMode.STREAMED, BodySendMode.STREAMED));
    assertThat(r.hasRequestHeaders()).as(r.toString()).isTrue();
    assertThat(metadata(r).getFieldsOrThrow("est_input_tokens").getNumberValue()).isEqualTo(777);
    assertThat(fallbacks("no_content_length")).isEqualTo(1);
    c.reset();
  }

  @Test
  void bodyModeNoneWithoutContentLength_chargedTheDefaultInputEstimate() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    ProcessingResponse r = c.send(headers(chat(), false, BodySendMode.NONE, BodySendMode.NONE));
    assertThat(metadata(r).getFieldsOrThrow("est_input_tokens").getNumberValue()).isEqualTo(777);
    c.reset();
  }

  @Test
  void contentLengthKnown_chargedByItsBytes_noBodyChargedNothing() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    ProcessingResponse r =
        c.send(
            headers(
                chat("content-length", "2000"),
                false,
                BodySendMode.STREAMED,
                BodySendMode.STREAMED));
    assertThat(metadata(r).getFieldsOrThrow("est_input_tokens").getNumberValue())
        .isEqualTo(500); // 4 bytes per token
    c.reset();
    ExtProcTestClient.Call d = client.open(Map.of());
    ProcessingResponse none = d.send(headers(chat(), true, BodySendMode.NONE, BodySendMode.NONE));
    assertThat(metadata(none).getFieldsOrThrow("est_input_tokens").getNumberValue()).isZero();
    assertThat(fallbacks("no_content_length")).isZero();
    d.reset();
  }

  @Test
  void streamedChunks_413OnTheChunkThatCrossesMaxBodyBytes_permitReleased() throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of());
    assertThat(
            c.send(headers(chat(), false, BodySendMode.STREAMED, BodySendMode.STREAMED))
                .hasRequestHeaders())
        .isTrue();
    assertThat(inFlight()).isEqualTo(1);
    assertThat(c.send(chunk(3000, false)).hasRequestBody()).isTrue();
    assertThat(c.send(chunk(1096, false)).hasRequestBody()).isTrue(); // exactly 4 KiB: fine
    ProcessingResponse r = c.send(chunk(1, false)); // one byte over
    assertThat(r.hasImmediateResponse()).as(r.toString()).isTrue();
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(413);
    assertThat(header(r, "x-sluice-reason")).isEqualTo("body_too_large");
    assertThat(inFlight()).isZero();
    c.sendOnly(chunk(10, true)); // pipelined before Envoy saw the 413: no error, no answer
    c.reset();
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> server.registry().find("sluice.extproc.streams.open").gauge().value() == 0);
    assertThat(
            server
                .registry()
                .find("sluice.decisions")
                .tag("reason", "body_too_large")
                .counter()
                .count())
        .isEqualTo(1);
    assertThat(server.registry().find("sluice.extproc.stream.errors").counters())
        .allSatisfy(e -> assertThat(e.count()).isZero()); // seeded at zero, none counted
  }

  @Test
  void defaultInputTokens_zeroOrNegative_isAConfigErrorNamingTheField() {
    for (String bad : new String[] {"0", "-5", "abc"}) {
      assertThatThrownBy(
              () ->
                  ConfigLoader.parse(
                      CONFIG.replace("defaultInputTokens: 777", "defaultInputTokens: " + bad)))
          .isInstanceOf(ConfigException.class)
          .hasMessageContaining("estimation.defaultInputTokens");
    }
    assertThat(
            ConfigLoader.parse(CONFIG.replace("estimation: {defaultInputTokens: 777}\n", ""))
                .estimation()
                .defaultInputTokens())
        .isEqualTo(1024);
  }
}
