package io.sluice.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sluice.emulator.AiFilters;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.UpstreamRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Envoy's native AI metadata through the emulator (docs/envoy.md, "Envoy's native AI metadata"):
 * the same arrivals (a seeded list of chat requests, prompts of 10..400 words, output caps of
 * 64..1500 tokens) against a pool of 6,000 tokens, every admitted answer held until the last
 * arrival (plain English prompts), decided three ways:
 *
 * <ol>
 *   <li>body: request body BUFFERED, Sluice's own parse (the tokenizer);
 *   <li>native headers-only: request body NONE, Envoy's request-info and AI protocol filters in the
 *       chain, both namespaces forwarded typed: decided at the headers from the content-length and
 *       the declared output cap; reconciled from the native token usage;
 *   <li>headers-only without the metadata: the content-length and the class's default output
 *       reserve (the contrast: the output cap is what decides here).
 * </ol>
 *
 * Run 2 reaches run 1's decisions, request by request; its input estimates' error against the body
 * parse is printed (docs/envoy.md reports it). Run 3 does not.
 */
@Timeout(120)
class NativeMetadataE2eTest {
  static final int ARRIVALS = 30;

  record Arrival(int words, int maxTokens) {}

  record Decided(boolean admitted, long estimatedInput) {}

  static List<Arrival> arrivals() {
    Random r = new Random(39);
    List<Arrival> a = new ArrayList<>();
    for (int i = 0; i < ARRIVALS; i++) {
      a.add(new Arrival(10 + r.nextInt(391), 64 + r.nextInt(1437)));
    }
    return a;
  }

  // plain English prose (the policy calibrates estimation.bytesPerToken to it)
  private static final String[] PROSE =
      ("The admission controller decides whether each request may start now, wait briefly or be"
              + " refused, so that an overloaded model keeps finishing useful work instead of"
              + " drowning in queues and retries. Operators size every pool in tokens and reserve"
              + " shares for interactive traffic.")
          .split(" ");

  static String body(Arrival a) {
    StringBuilder words = new StringBuilder();
    for (int i = 0; i < a.words(); i++) {
      words.append(PROSE[i % PROSE.length]).append(' ');
    }
    return "{\"model\":\"gpt-4o\",\"max_tokens\":"
        + a.maxTokens()
        + ",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
        + "{\"role\":\"user\",\"content\":\""
        + words.toString().trim()
        + "\"}]}";
  }

  static Policy policy() {
    return Policy.base()
        .with("pools.gpu.capacity", "6000")
        .with("classes.interactive.maxOutputTokens", "2000")
        .with("classes.interactive.reservedShare", "1.0")
        .with("classes.batch.reservedShare", "0.0")
        // calibrated to these prompts (content-length ÷ the tokenizer's count of the body, about
        // 6): with the default 4 the headers-only input runs about 50 % high and 2 of the 30
        // decisions differ (docs/envoy.md)
        .with("estimation.bytesPerToken", "6.0");
  }

  static FilterConfig nativeHeadersOnly(boolean aiFilters) {
    return SluiceEnvoyHarness.recommendedFilter()
        .requestBodyMode(FilterConfig.BodyMode.NONE)
        .responseBodyMode(FilterConfig.BodyMode.STREAMED)
        .sendProtocolConfig(true)
        .aiFilters(aiFilters)
        .typedForwardingNamespaces(
            AiFilters.REQUEST_INFO_NAMESPACE, AiFilters.TOKEN_USAGE_NAMESPACE)
        .build();
  }

  record Run(List<Decided> decisions, SluiceEnvoyHarness h) {}

  /** Sends the arrivals one by one, each decided before the next; admitted answers held. */
  static List<Decided> decide(SluiceEnvoyHarness h) {
    h.upstream.mode(ControlledUpstream.Mode.HOLD_RESPONSE);
    List<Decided> out = new ArrayList<>();
    for (Arrival a : arrivals()) {
      int before = h.upstream.received().size();
      CompletableFuture<HttpResult> f = h.sendAsync(SluiceEnvoyHarness.chat(body(a)).build());
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> f.isDone() || h.upstream.received().size() > before);
      if (f.isDone()) {
        HttpResult r = f.join();
        assertThat(r.status()).as("a refusal").isIn(429, 503);
        out.add(new Decided(false, -1));
      } else {
        UpstreamRequest u = h.upstream.received().get(before);
        String est = u.headers().first("x-sluice-estimate").orElseThrow();
        long input = Long.parseLong(est.replaceAll("^input=(\\d+);.*$", "$1"));
        out.add(new Decided(true, input));
      }
    }
    h.upstream.releaseHeld();
    h.awaitNothingInFlight();
    return out;
  }

  @Test
  void nativeHeadersOnly_reachesTheBodyParsesDecisions_andReconcilesFromNativeUsage() {
    List<Decided> body;
    try (SluiceEnvoyHarness h = SluiceEnvoyHarness.start(policy())) {
      body = decide(h);
      assertThat(h.counter("sluice.native.metadata")).as("nothing forwarded").isZero();
    }
    List<Decided> nat;
    double usageAgreed;
    double usageChecked;
    try (SluiceEnvoyHarness h = SluiceEnvoyHarness.start(policy(), nativeHeadersOnly(true))) {
      nat = decide(h);
      long admitted = nat.stream().filter(Decided::admitted).count();
      assertThat(
              h.counter("sluice.native.metadata", "kind", "request_info", "agreement", "unchecked"))
          .as("request info used at the headers, once per arrival")
          .isEqualTo(ARRIVALS);
      usageChecked =
          h.counter("sluice.native.metadata", "kind", "token_usage", "status", "complete");
      usageAgreed =
          h.counter(
              "sluice.native.metadata",
              "kind",
              "token_usage",
              "status",
              "complete",
              "agreement",
              "agree",
              "used",
              "true");
      assertThat(usageChecked).as("native usage of every answer").isEqualTo(admitted);
      assertThat(usageAgreed)
          .as("agrees with Sluice's own parse of the answer")
          .isEqualTo(admitted);
      assertThat(h.counter("sluice.native.metadata.invalid")).isZero();
      assertThat(h.counter("sluice.tokens.charged", "rule", "reported"))
          .as("charged from the reported usage")
          .isPositive();
    }
    List<Decided> plain;
    try (SluiceEnvoyHarness h = SluiceEnvoyHarness.start(policy(), nativeHeadersOnly(false))) {
      plain = decide(h);
    }

    List<Boolean> bodyAdmits = body.stream().map(Decided::admitted).toList();
    List<Boolean> nativeAdmits = nat.stream().map(Decided::admitted).toList();
    List<Boolean> plainAdmits = plain.stream().map(Decided::admitted).toList();
    double sumAbs = 0;
    double maxAbs = 0;
    int both = 0;
    for (int i = 0; i < ARRIVALS; i++) {
      if (body.get(i).admitted() && nat.get(i).admitted()) {
        double e =
            (double) (nat.get(i).estimatedInput() - body.get(i).estimatedInput())
                / body.get(i).estimatedInput();
        sumAbs += Math.abs(e);
        maxAbs = Math.max(maxAbs, Math.abs(e));
        both++;
      }
    }
    System.out.printf(
        "native-metadata e2e: %d arrivals; admitted body %d, native headers-only %d, headers-only"
            + " without metadata %d; decisions differing from the body run: native %d, without"
            + " metadata %d; input estimate error vs the body parse over %d admitted: mean |e| %.1f%%,"
            + " max |e| %.1f%%; token usage agreed %s of %s%n",
        ARRIVALS,
        count(bodyAdmits),
        count(nativeAdmits),
        count(plainAdmits),
        differing(bodyAdmits, nativeAdmits),
        differing(bodyAdmits, plainAdmits),
        both,
        100 * sumAbs / Math.max(1, both),
        100 * maxAbs,
        usageAgreed,
        usageChecked);
    assertThat(nativeAdmits).as("the same decisions as the body parse").isEqualTo(bodyAdmits);
    assertThat(bodyAdmits).as("the pool refuses some arrivals").contains(true, false);
    assertThat(plainAdmits).as("without the declared output cap").isNotEqualTo(bodyAdmits);
  }

  /**
   * Body parsing with Envoy's request info beside it (request body BUFFERED, the AI filters in the
   * chain, both namespaces forwarded): each arrival's request info is cross-checked against
   * Sluice's own parse of the body and counted ({@code request_info}, {@code agree}, used), and the
   * decisions and estimates are the body run's.
   */
  @Test
  void bodyParseWithRequestInfo_crossCheckedAgainstTheBody_agreeOnEveryArrival() {
    List<Decided> body;
    try (SluiceEnvoyHarness h = SluiceEnvoyHarness.start(policy())) {
      body = decide(h);
    }
    FilterConfig both =
        SluiceEnvoyHarness.recommendedFilter()
            .sendProtocolConfig(true)
            .aiFilters(true)
            .typedForwardingNamespaces(
                AiFilters.REQUEST_INFO_NAMESPACE, AiFilters.TOKEN_USAGE_NAMESPACE)
            .build();
    try (SluiceEnvoyHarness h = SluiceEnvoyHarness.start(policy(), both)) {
      List<Decided> checked = decide(h);
      assertThat(
              h.counter(
                  "sluice.native.metadata",
                  "kind",
                  "request_info",
                  "status",
                  "declared",
                  "agreement",
                  "agree",
                  "used",
                  "true"))
          .as("every arrival's request info agreed with the body parse")
          .isEqualTo(ARRIVALS);
      assertThat(h.counter("sluice.native.metadata", "kind", "request_info"))
          .as("no disagreement, nothing unchecked")
          .isEqualTo(ARRIVALS);
      assertThat(checked).as("the body run's decisions and estimates").isEqualTo(body);
    }
  }

  private static long count(List<Boolean> l) {
    return l.stream().filter(b -> b).count();
  }

  static int differing(List<Boolean> a, List<Boolean> b) {
    int n = 0;
    for (int i = 0; i < a.size(); i++) {
      n += a.get(i).equals(b.get(i)) ? 0 : 1;
    }
    return n;
  }
}
