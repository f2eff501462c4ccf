package io.sluice.extproc;

import static io.sluice.extproc.ExtProcServerTestBase.chat;
import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Struct;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.micrometer.core.instrument.Counter;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.admission.PoolState;
import io.sluice.core.time.Ticker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The learned output reserve through a real server: clients ask {@code max_tokens: 4096} and the
 * answers use about 200; after the warm-up the admit's metadata, the estimate header and the pool's
 * work in flight carry the learned reserve instead of the cap, and a reload keeps it.
 */
class LearnedReserveServiceTest {
  private static final int WARMUP = 20;

  @TempDir Path dir;
  private Path file;
  private SluiceServer server;
  private ExtProcTestClient client;

  private static String policy(long capacity) {
    return """
        server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}, reloadInterval: 1h, warmup: {enabled: false}}
        estimation: {learnedReserve: {warmup: %d, halfLife: 100, maxKeys: 100}}
        pools: {gpu: {capacity: %d}}
        classes: {interactive: {reservedShare: 1.0, defaultOutputTokens: 1024, maxOutputTokens: 8192, reserveQuantile: 0.95}}
        signals: {tenant: [{metadata: x-sluice-tenant}]}
        routes:
          - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
        responses: {decisionHeader: true, estimateHeader: true}
        """
        .formatted(WARMUP, capacity);
  }

  @BeforeEach
  void start() throws Exception {
    file = dir.resolve("sluice.yaml");
    Files.writeString(file, policy(1_000_000));
    server =
        SluiceServer.start(
            ConfigLoader.load(file),
            new SluiceServer.Options(file, Map.of(), Ticker.system(), Clock.systemUTC()));
    client = new ExtProcTestClient(server.grpcPort());
  }

  @AfterEach
  void stop() throws Exception {
    client.close();
    server.close();
  }

  /** A chat request asking 4096 tokens, admitted at its body; the stream is left open. */
  private ExtProcTestClient.Call admit(ProcessingResponse[] answer) throws Exception {
    ExtProcTestClient.Call c = client.open(Map.of("x-sluice-tenant", "acme"));
    ProcessingResponse h =
        c.send(headers(chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    assertThat(h.hasRequestHeaders()).isTrue();
    ProcessingResponse b =
        c.send(
            body(
                "{\"model\":\"gpt-4o\",\"max_tokens\":4096,"
                    + "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}"));
    assertThat(b.hasRequestBody()).isTrue();
    answer[0] = b;
    return c;
  }

  /** The answer ends with {@code completionTokens} reported. */
  private static void finish(ExtProcTestClient.Call c, int completionTokens) throws Exception {
    c.send(responseHeaders(200, "application/json", false));
    c.send(
        responseBody(
            "{\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":"
                + completionTokens
                + ",\"total_tokens\":"
                + (10 + completionTokens)
                + "}}",
            true));
    c.reset();
  }

  private static Struct metadata(ProcessingResponse r) {
    return r.getDynamicMetadata().getFieldsOrThrow("sluice").getStructValue();
  }

  private long workInFlight() {
    PoolState pool = server.runtime().controller().pool("gpu");
    return pool.snapshot(server.runtime().ticker().nanos()).workInFlight();
  }

  private String admin(String path) throws Exception {
    return ExtProcTestClient.adminGet(server.adminPort(), path)
        .replace(" : ", ":")
        .replace(", ", ",");
  }

  private double decisions(String rule) {
    Counter c =
        server
            .registry()
            .find("sluice.reserve.decisions")
            .tag("pool", "gpu")
            .tag("rule", rule)
            .counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void afterWarmup_theLearnedReserveIsWhatThePoolAndTheMetadataCarry_andAReloadKeepsIt()
      throws Exception {
    ProcessingResponse[] answer = new ProcessingResponse[1];
    // before warm-up: the prior, the class default below the client's cap (4096)
    ExtProcTestClient.Call first = admit(answer);
    Struct md = metadata(answer[0]);
    assertThat(md.getFieldsOrThrow("est_output_tokens").getNumberValue()).isEqualTo(1024);
    long capWork = (long) md.getFieldsOrThrow("work_units").getNumberValue();
    assertThat(workInFlight()).isEqualTo(capWork);
    finish(first, 200);
    for (int i = 1; i < WARMUP; i++) {
      ExtProcTestClient.Call c = admit(answer);
      assertThat(metadata(answer[0]).getFieldsOrThrow("est_output_tokens").getNumberValue())
          .isEqualTo(1024);
      finish(c, 180 + (i % 5) * 10); // 180 .. 220
    }
    assertThat(decisions("prior")).isEqualTo(WARMUP);
    // the last answer is learned when its permit is released (the stream's end, on the server)
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> admin("/debug/estimates").contains("\"samples\":" + WARMUP));

    ExtProcTestClient.Call warmed = admit(answer);
    md = metadata(answer[0]);
    long learned = (long) md.getFieldsOrThrow("est_output_tokens").getNumberValue();
    // the bound on the 0.95 quantile of 180..220 from 20 answers, 10 % buckets
    assertThat(learned).isBetween(200L, 260L);
    long learnedWork = (long) md.getFieldsOrThrow("work_units").getNumberValue();
    assertThat(capWork - learnedWork).isEqualTo(1024 - learned); // outputWeight 1
    assertThat(workInFlight()).isEqualTo(learnedWork);
    assertThat(decisions("learned") + decisions("bound")).isEqualTo(1);
    finish(warmed, 200);

    String debug = admin("/debug/estimates?limit=5");
    assertThat(debug)
        .contains("\"pool\":\"gpu\"")
        .contains("\"model\":\"gpt-4o\"")
        .contains("\"scope\":\"chat\"")
        .contains("\"tenant\":\"acme\"")
        .contains("\"warmed\":true")
        .contains("\"quantile\":0.95");
    assertThat(admin("/debug/estimates?limit=1").split("\"pool\"", -1)).hasSize(2); // one key
    assertThat(admin("/debug/estimates?limit=x")).startsWith("limit:");
    assertThat(server.registry().find("sluice.reserve.learned.keys").gauge().value())
        .isEqualTo(2); // the coarse key and acme's

    // a reload that keeps the pool keeps what was learned
    Files.writeString(file, policy(2_000_000));
    assertThat(server.reloadIfChanged()).isTrue();
    assertThat(server.config().pools().get("gpu").capacityWorkUnits()).isEqualTo(2_000_000);
    ExtProcTestClient.Call afterReload = admit(answer);
    assertThat((long) metadata(answer[0]).getFieldsOrThrow("est_output_tokens").getNumberValue())
        .isCloseTo(learned, org.assertj.core.data.Offset.offset(10L));
    finish(afterReload, 200);
  }
}
