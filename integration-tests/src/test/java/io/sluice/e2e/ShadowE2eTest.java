package io.sluice.e2e;

import static io.sluice.e2e.SluiceEnvoyHarness.sluiceMetadata;
import static io.sluice.e2e.SluiceEnvoyHarness.str;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.UpstreamRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Observe-only rollout (issue 16): one deterministic arrival sequence through the Envoy emulator,
 * run twice on fresh servers, once with pool {@code gpu} enforcing and once in {@code mode:
 * shadow}. In shadow no client is refused, and {@code
 * sluice_shadow_decisions_total{would="reject"}} counts, by reason, exactly what the enforcing run
 * refused; request by request the upstream sees the would-be decision, and the pool's ledger after
 * each arrival is the same in both runs.
 *
 * <p>Why the counts are exact: queue-hold is off (every decision is an immediate admit or refusal),
 * the upstream holds every response until all arrivals are decided (nothing completes, so no
 * service time is learned and no capacity frees in between), each arrival is sent after the one
 * before it was decided, and the only time-based rule, carol's {@code rpm: 1}, refills one request
 * a minute, far longer than the run.
 */
@Timeout(60)
class ShadowE2eTest {
  private SluiceEnvoyHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  private static Policy policy() {
    return Policy.base()
        // batch may not go beyond its 10 % (100 work units): a second batch request is class_share
        .with(
            "classes.batch",
            "{rank: 1, reservedShare: 0.1, borrow: false, maxQueueWait: 0s,"
                + " defaultOutputTokens: 50, maxOutputTokens: 200}")
        .with("tiers.metered", "{weight: 1, rpm: 1}")
        .with("tenants.known", "{acme: {tier: pro}, carol: {tier: metered}}");
  }

  private static HttpRequest chat(String tenant, int maxTokens) {
    return HttpRequest.post(SluiceEnvoyHarness.CHAT, SluiceEnvoyHarness.chatBody(maxTokens, false))
        .routeGrpcInitialMetadata("x-sluice-tenant", tenant)
        .build();
  }

  private static HttpRequest batch() {
    return HttpRequest.post(
            "/v1/completions",
            "{\"model\":\"gpt-4o\",\"prompt\":\"Summarize.\",\"max_tokens\":200}")
        .routeGrpcInitialMetadata("x-sluice-tenant", "acme")
        .build();
  }

  /**
   * The arrivals, in order: acme (pro, no cap), bob (unknown: free, 2 at a time), carol (1 rpm).
   */
  private static final List<HttpRequest> ARRIVALS =
      List.of(
          chat("acme", 350), // admitted
          chat("acme", 350), // admitted
          chat("acme", 350), // pool_saturated: interactive may use the pool less batch's 10 %
          chat("bob", 10), // admitted
          chat("bob", 10), // admitted
          chat("bob", 10), // tenant_concurrency: bob's tier caps 2
          chat("carol", 10), // admitted
          chat("carol", 10), // tenant_rate
          batch(), // admitted (as its class's whole 10 %)
          batch(), // class_share
          chat("acme", 350)); // pool_saturated

  /** What one run saw. */
  record Run(
      List<String> decisions, // per arrival: "admit" or the refusal's reason (enforced)
      List<String> upstreamSaw, // per arrival that reached the upstream: decision header, reason
      List<String> ledger, // per arrival: requests and work in flight after it was decided
      List<HttpResult> results,
      Map<String, Double> refusedByReason,
      Map<String, Double> wouldRejectByReason,
      double wouldQueue,
      double released) {}

  private Run run(Policy policy) {
    h = SluiceEnvoyHarness.start(policy);
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    List<String> decisions = new ArrayList<>();
    List<String> upstreamSaw = new ArrayList<>();
    List<String> ledger = new ArrayList<>();
    List<CompletableFuture<HttpResult>> exchanges = new ArrayList<>();
    for (HttpRequest r : ARRIVALS) {
      int before = h.upstream.received().size();
      CompletableFuture<HttpResult> f = h.sendAsync(r);
      exchanges.add(f);
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> f.isDone() || h.upstream.received().size() > before);
      if (h.upstream.received().size() > before) {
        UpstreamRequest u = h.upstream.received().get(before);
        decisions.add("admit");
        upstreamSaw.add(
            u.headers().first("x-sluice-decision").orElse("-")
                + " "
                + u.headers().first("x-sluice-reason").orElse("-"));
      } else {
        HttpResult refused = SluiceEnvoyHarness.result(f);
        assertThat(refused.outcome()).isEqualTo(HttpResult.Outcome.LOCAL_REPLY);
        decisions.add(refused.header("x-sluice-reason").orElse("?"));
        upstreamSaw.add("(refused)");
      }
      ledger.add(h.pool().requestsInFlight() + " requests, " + h.pool().workInFlight() + " work");
    }
    h.upstream.releaseHeld();
    List<HttpResult> results = new ArrayList<>();
    for (CompletableFuture<HttpResult> f : exchanges) {
      results.add(SluiceEnvoyHarness.result(f));
    }
    h.awaitNothingInFlight();
    Map<String, Double> refused = new TreeMap<>();
    Map<String, Double> wouldReject = new TreeMap<>();
    for (String reason :
        List.of(
            "pool_saturated",
            "class_share",
            "tenant_concurrency",
            "tenant_rate",
            "tenant_tokens",
            "queue_full",
            "deadline_unreachable")) {
      double n = h.counter("sluice.decisions", "decision", "reject", "reason", reason);
      if (n > 0) {
        refused.put(reason, n);
      }
      double w = h.counter("sluice.shadow.decisions", "would", "reject", "reason", reason);
      if (w > 0) {
        wouldReject.put(reason, w);
      }
    }
    Run out =
        new Run(
            decisions,
            upstreamSaw,
            ledger,
            results,
            refused,
            wouldReject,
            h.counter("sluice.shadow.decisions", "would", "queue"),
            h.releasedAny());
    h.close();
    h = null;
    return out;
  }

  @Test
  void shadow_refusesNothing_andWouldRejectCountsWhatEnforcementRefuses() {
    Run enforced = run(policy());
    Run shadow = run(policy().with("pools.gpu.mode", "shadow"));

    // the enforcing run refuses for four different reasons
    assertThat(enforced.decisions())
        .containsExactly(
            "admit",
            "admit",
            "pool_saturated",
            "admit",
            "admit",
            "tenant_concurrency",
            "admit",
            "tenant_rate",
            "admit",
            "class_share",
            "pool_saturated");
    assertThat(enforced.refusedByReason())
        .isEqualTo(
            Map.of(
                "class_share",
                1.0,
                "pool_saturated",
                2.0,
                "tenant_concurrency",
                1.0,
                "tenant_rate",
                1.0));
    assertThat(enforced.wouldRejectByReason()).isEmpty();

    // shadow: nobody refused, every answer the upstream's
    assertThat(shadow.decisions()).containsOnly("admit").hasSize(ARRIVALS.size());
    assertThat(shadow.results())
        .allSatisfy(
            r -> {
              assertThat(r.outcome()).isEqualTo(HttpResult.Outcome.UPSTREAM_RESPONSE);
              assertThat(r.status()).isEqualTo(200);
            });
    assertThat(shadow.refusedByReason()).isEmpty();
    // ... and would_reject counts, by reason, exactly what enforcement refused
    assertThat(shadow.wouldRejectByReason()).isEqualTo(enforced.refusedByReason());
    assertThat(shadow.wouldQueue()).isZero(); // queue-hold is off
    // request by request, the upstream (and Envoy's access log) sees the would-be decision
    for (int i = 0; i < ARRIVALS.size(); i++) {
      String e = enforced.decisions().get(i);
      String expected = e.equals("admit") ? "admit -" : "would_reject " + e;
      assertThat(shadow.upstreamSaw().get(i)).as("arrival %d", i).isEqualTo(expected);
      if (!e.equals("admit")) {
        var md = sluiceMetadata(shadow.results().get(i));
        assertThat(str(md, "decision")).isEqualTo("admit");
        assertThat(str(md, "mode")).isEqualTo("shadow");
        assertThat(str(md, "would")).isEqualTo("reject");
        assertThat(str(md, "would_reason")).isEqualTo(e);
      }
    }
    // the ledger holds exactly what enforcement admitted, after every arrival
    assertThat(shadow.ledger()).isEqualTo(enforced.ledger());
    // permits: one per request enforcement admitted, released once each, in both runs
    long admitted = enforced.decisions().stream().filter("admit"::equals).count();
    assertThat(enforced.released()).isEqualTo(admitted);
    assertThat(shadow.released()).isEqualTo(admitted);
  }
}
