package io.sluice.e2e;

import static io.sluice.e2e.NativeMetadataE2eTest.ARRIVALS;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.e2e.NativeMetadataE2eTest.Arrival;
import io.sluice.e2e.NativeMetadataE2eTest.Decided;
import io.sluice.emulator.HttpResult;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The learned bytes-per-token through the emulator (docs/estimation.md, "Learned bytes-per-token"):
 * {@link NativeMetadataE2eTest}'s arrivals and pool with the DEFAULT {@code
 * estimation.bytesPerToken} (4), the upstream reporting the prompt's tokens at about 6 bytes each
 * (what the tokenizer counts of these prompts: the body parse's estimates), decided three ways:
 *
 * <ol>
 *   <li>body: request body BUFFERED, Sluice's own parse;
 *   <li>native headers-only, cold: content-length ÷ 4, about 50 % high; some decisions differ;
 *   <li>native headers-only after {@link #WARMUP} answers (other prompts) whose native token usage
 *       (COMPLETE) taught the ratio: the body run's decisions, request by request.
 * </ol>
 *
 * The input estimate error against the body parse before and after learning is printed
 * (docs/envoy.md reports it).
 */
@Timeout(180)
class LearnedBytesPerTokenE2eTest {
  static final int WARMUP = 12;

  static Policy policy() {
    return Policy.base()
        .with("pools.gpu.capacity", "6000")
        .with("classes.interactive.maxOutputTokens", "2000")
        .with("classes.interactive.reservedShare", "1.0")
        .with("classes.batch.reservedShare", "0.0");
  }

  /** Answers to other prompts than the arrivals', each released before the next. */
  static void warmUp(SluiceEnvoyHarness h) {
    h.upstream.mode(ControlledUpstream.Mode.SIMULATED);
    Random r = new Random(6);
    for (int i = 0; i < WARMUP; i++) {
      Arrival a = new Arrival(10 + r.nextInt(391), 64 + r.nextInt(200));
      HttpResult res = h.send(SluiceEnvoyHarness.chat(NativeMetadataE2eTest.body(a)).build());
      assertThat(res.status()).as("warm-up answer " + i).isEqualTo(200);
    }
    h.awaitNothingInFlight();
  }

  @Test
  void headersOnly_defaultRatio_afterWarmup_reachesTheBodyParsesDecisions() {
    List<Decided> body;
    try (SluiceEnvoyHarness h = SluiceEnvoyHarness.start(policy())) {
      h.upstream.promptBytesPerToken(6);
      body = NativeMetadataE2eTest.decide(h);
    }
    List<Decided> cold;
    try (SluiceEnvoyHarness h =
        SluiceEnvoyHarness.start(policy(), NativeMetadataE2eTest.nativeHeadersOnly(true))) {
      h.upstream.promptBytesPerToken(6);
      assertThat(h.gauge("sluice.native.bytes.per.token", "pool", "gpu")).isEqualTo(4.0);
      cold = NativeMetadataE2eTest.decide(h);
    }
    List<Decided> warm;
    double learned;
    try (SluiceEnvoyHarness h =
        SluiceEnvoyHarness.start(policy(), NativeMetadataE2eTest.nativeHeadersOnly(true))) {
      h.upstream.promptBytesPerToken(6);
      warmUp(h);
      assertThat(h.counter("sluice.native.bytes.per.token.learned", "pool", "gpu"))
          .as("every warm-up answer taught the ratio")
          .isEqualTo(WARMUP);
      learned = h.gauge("sluice.native.bytes.per.token", "pool", "gpu");
      assertThat(learned).isBetween(5.5, 6.0);
      warm = NativeMetadataE2eTest.decide(h);
    }
    List<Boolean> bodyAdmits = body.stream().map(Decided::admitted).toList();
    List<Boolean> coldAdmits = cold.stream().map(Decided::admitted).toList();
    List<Boolean> warmAdmits = warm.stream().map(Decided::admitted).toList();
    System.out.printf(
        "learned bytes-per-token e2e: %d arrivals, prior 4, learned %.3f after %d answers;"
            + " decisions differing from the body run: cold %d, warmed %d; input estimate error vs"
            + " the body parse: cold %s, warmed %s%n",
        ARRIVALS,
        learned,
        WARMUP,
        NativeMetadataE2eTest.differing(bodyAdmits, coldAdmits),
        NativeMetadataE2eTest.differing(bodyAdmits, warmAdmits),
        error(body, cold),
        error(body, warm));
    assertThat(bodyAdmits).as("the pool refuses some arrivals").contains(true, false);
    assertThat(coldAdmits).as("cold, content-length ÷ 4").isNotEqualTo(bodyAdmits);
    assertThat(warmAdmits).as("after learning: the body parse's decisions").isEqualTo(bodyAdmits);
  }

  /** Mean and max |estimated − body| ÷ body over the arrivals both runs admitted. */
  static String error(List<Decided> body, List<Decided> other) {
    double sum = 0;
    double max = 0;
    int both = 0;
    for (int i = 0; i < ARRIVALS; i++) {
      if (body.get(i).admitted() && other.get(i).admitted()) {
        double e =
            Math.abs(
                (double) (other.get(i).estimatedInput() - body.get(i).estimatedInput())
                    / body.get(i).estimatedInput());
        sum += e;
        max = Math.max(max, e);
        both++;
      }
    }
    return String.format(
        "mean |e| %.1f%%, max |e| %.1f%% over %d", 100 * sum / Math.max(1, both), 100 * max, both);
  }
}
