package io.sluice.extproc;

import static io.sluice.extproc.ExtProcTestClient.body;
import static io.sluice.extproc.ExtProcTestClient.headers;
import static io.sluice.extproc.ExtProcTestClient.responseBody;
import static io.sluice.extproc.ExtProcTestClient.responseHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.bootstrap.SluiceServer;
import io.sluice.config.ConfigLoader;
import io.sluice.core.quota.SharedWorkflowBudget;
import io.sluice.core.time.Ticker;
import io.sluice.store.LocalRedis;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A workflow's budget is the workflow's whatever the replica count: two servers on one Redis (the
 * one at 127.0.0.1:6379, a key prefix of the test's own), a pool with {@code workflow.maxRequests:
 * 1}; one workflow sends a request to each replica at once: the first is admitted, the second is
 * refused 429 {@code fanout_budget} on the other replica (a per-replica share would have admitted
 * both), and once the first ends the place is free on either replica.
 */
class WorkflowBudgetAcrossReplicasTest {
  private static final String POLICY =
      """
      server: {grpc: {host: 127.0.0.1, port: 0}, admin: {host: 127.0.0.1, port: 0}}
      pools:
        gpu:
          capacity: 100000
          maxRequests: 8
          maxMessageTimeout: 5s
          retryAfter: {min: 1s, max: 30s, jitter: 0.0}
          workflow: {maxRequests: 1}
      classes:
        interactive: {rank: 0, reservedShare: 1.0, maxQueueWait: 4s, deadline: 30s, queue: {tenantShare: 1.0},
                      defaultOutputTokens: 100, maxOutputTokens: 1000}
      signals:
        workflow: [{metadata: x-sluice-workflow}]
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, class: interactive, format: openai-chat}
      quotas: {keyPrefix: %s}
      replicas: {leaseTtl: 2s, renewInterval: 200ms, expectedReplicas: 2, floor: 0}
      rateLimit:
        enabled: false
        env: {BACKEND_TYPE: redis, REDIS_URL: "127.0.0.1:%d"}
      """;

  private static final String CHAT =
      "{\"model\":\"llama\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

  @Test
  void budgetOfOne_twoReplicas_theSecondConcurrentRequestIsRefusedFanoutBudget() throws Exception {
    assumeTrue(LocalRedis.reachable(LocalRedis.PORT), "redis-server on 127.0.0.1:6379");
    String policy = POLICY.formatted(LocalRedis.uniquePrefix(), LocalRedis.PORT);
    try (SluiceServer a = start(policy, "replica-a");
        SluiceServer b = start(policy, "replica-b");
        ExtProcTestClient ca = new ExtProcTestClient(a.grpcPort());
        ExtProcTestClient cb = new ExtProcTestClient(b.grpcPort())) {
      assertThat(places(a).shared()).as("counted in the shared store").isTrue();

      ExtProcTestClient.Call first = ca.open(Map.of("x-sluice-workflow", "run-8"));
      assertThat(send(first).hasRequestBody()).as("admitted on A").isTrue();
      assertThat(places(a).held("gpu", "run-8")).isEqualTo(1);

      ExtProcTestClient.Call second = cb.open(Map.of("x-sluice-workflow", "run-8"));
      ProcessingResponse refused = send(second);
      assertThat(refused.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(429);
      assertThat(ExtProcServerTestBase.header(refused, "x-sluice-reason"))
          .isEqualTo("fanout_budget");
      assertThat(refused.getImmediateResponse().getBody().toStringUtf8())
          .contains("across replicas")
          .contains("maxRequests 1")
          .doesNotContain("run-8");
      assertThat(places(b).held("gpu", "run-8")).as("B holds nothing").isZero();

      ExtProcTestClient.Call other = cb.open(Map.of("x-sluice-workflow", "run-9"));
      assertThat(send(other).hasRequestBody()).as("another workflow on B").isTrue();

      end(first); // the place comes back, once
      await().atMost(Duration.ofSeconds(5)).until(() -> places(a).held() == 0);
      ExtProcTestClient.Call third = cb.open(Map.of("x-sluice-workflow", "run-8"));
      assertThat(send(third).hasRequestBody()).as("now admitted on B").isTrue();
      end(third);
      end(other);
      await().atMost(Duration.ofSeconds(5)).until(() -> places(b).held() == 0);
    }
  }

  private static SharedWorkflowBudget places(SluiceServer s) {
    return s.runtime().sessions().sharedWorkflows();
  }

  private static ProcessingResponse send(ExtProcTestClient.Call c) throws Exception {
    c.send(
        headers(ExtProcServerTestBase.chat(), false, BodySendMode.BUFFERED, BodySendMode.STREAMED));
    ProcessingResponse r = c.send(body(CHAT));
    if (r.hasOverrideMessageTimeout()) { // held until B's replica share covers it (renewals)
      r = c.responses.poll(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(r).as("an answer to the held request within 5 s").isNotNull();
    }
    return r;
  }

  private static void end(ExtProcTestClient.Call c) throws Exception {
    c.send(responseHeaders(200, "application/json", false));
    c.send(responseBody("{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}", true));
  }

  private static SluiceServer start(String policy, String replica) throws Exception {
    return SluiceServer.start(
        ConfigLoader.parse(policy),
        new SluiceServer.Options(
            null, Map.of("SLUICE_REPLICA_ID", replica), Ticker.system(), Clock.systemUTC()));
  }
}
