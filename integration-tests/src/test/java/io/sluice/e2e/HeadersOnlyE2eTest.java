package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.num;
import static io.sluice.e2e.SluiceEnvoyHarness.sluiceMetadata;
import static io.sluice.e2e.SluiceEnvoyHarness.str;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 13 finding 5 through the Envoy emulator: with a STREAMED request body the decision is made
 * at request headers. A chunked upload (no content-length) is charged {@code
 * estimation.defaultInputTokens}, not 0; the chunks are held to {@code limits.maxBodyBytes} (413
 * {@code body_too_large} on the chunk that crosses it, the permit released).
 */
@Timeout(20)
class HeadersOnlyE2eTest {
  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  private static FilterConfig streamedRequest() {
    return SluiceEnvoyHarness.recommendedFilter()
        .requestBodyMode(FilterConfig.BodyMode.STREAMED)
        .build();
  }

  private static HttpRequest chunked(int chunks, int bytesPerChunk) {
    HttpRequest.Builder b =
        HttpRequest.builder()
            .method("POST")
            .path(SluiceEnvoyHarness.CHAT)
            .header("content-type", "application/json")
            .header("transfer-encoding", "chunked")
            .routeGrpcInitialMetadata("x-sluice-tenant", "acme");
    for (int i = 0; i < chunks; i++) {
      b.bodyChunk("x".repeat(bytesPerChunk).getBytes(StandardCharsets.UTF_8));
    }
    return b.build();
  }

  @Test
  void chunkedUpload_streamedMode_chargedTheDefaultInputEstimate() {
    h =
        SluiceEnvoyHarness.start(
            Policy.base().with("estimation.defaultInputTokens", "300"), streamedRequest());

    HttpResult r = h.send(chunked(3, 100));

    assertThat(r.upstreamRequest()).isPresent();
    Struct md = sluiceMetadata(r);
    assertThat(str(md, "decision")).isEqualTo("admit");
    assertThat(num(md, "est_input_tokens")).isEqualTo(300);
    assertThat(h.counter("sluice.estimate.fallbacks", "cause", "no_content_length")).isEqualTo(1);
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isEqualTo(1);
  }

  @Test
  void chunkedUpload_overMaxBodyBytes_413OnTheCrossingChunk_permitReleased() throws Exception {
    h =
        SluiceEnvoyHarness.start(
            Policy.base()
                .with("limits.maxBodyBytes", "1KiB")
                .with("estimation.defaultInputTokens", "300"),
            streamedRequest());

    HttpResult r = h.send(chunked(4, 400)); // 400, 800, 1200: the third chunk crosses 1 KiB

    assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.LOCAL_REPLY);
    assertThat(r.status()).isEqualTo(413);
    assertThat(r.header("x-sluice-reason")).contains("body_too_large");
    assertThat(h.counter("sluice.decisions", "reason", "body_too_large")).isEqualTo(1);
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).as("the admitted permit is given back").isEqualTo(1);
    // the next request still gets in (the simulated provider answers 400 to a body of x's)
    HttpResult next = h.send(chunked(1, 100));
    assertThat(next.upstreamRequest()).isPresent();
    assertThat(str(sluiceMetadata(next), "decision")).isEqualTo("admit");
  }
}
