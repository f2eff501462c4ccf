package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The adaptive time per output token is learned from the release's facts alone: the event carries
 * the permit's grant time and the first chunk's, so {@link AdaptiveSignals} computes the sample the
 * session computed inline before.
 */
class AdaptiveSignalsTest {
  private static final long MS = 1_000_000L;

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(1_800_000_000_000L), ZoneOffset.UTC);
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final AdmissionController controller = OneSlotPool.controller();
  private final List<SessionEvent> events = new ArrayList<>();
  private final Sessions sessions =
      OneSlotPool.sessions(
          controller, quotas, ticker, clock, (delayNanos, task) -> () -> {}, events::add);

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aStreamedAnswer_itsReleaseCarriesWhatTheTimePerOutputTokenNeeds() {
    long now = ticker.nanos();
    Subject subject =
        OneSlotPool.chat(
            new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0)),
            now,
            null,
            Duration.ofSeconds(5).toNanos());
    AdmissionSession s =
        sessions.open(subject, new AdmissionSessionTest.Front(), Runnable::run, SessionSteps.NONE);
    s.begin(true, true, 0, now);
    long admittedAt = ticker.nanos();
    s.running().headers(200, "text/event-stream", true);
    ticker.advanceNanos(150 * MS);
    byte[] first =
        utf8(
            "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\","
                + "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" hello\"}}]}\n\n");
    s.running().body(first, 0, first.length, false);
    ticker.advanceNanos(400 * MS);
    byte[] last =
        utf8(
            "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\","
                + "\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":5,"
                + "\"total_tokens\":14}}\n\ndata: [DONE]\n\n");
    s.running().body(last, 0, last.length, true);
    assertThat(s.release(Outcome.COMPLETED)).isTrue();

    SessionEvent.Released r =
        events.stream()
            .filter(SessionEvent.Released.class::isInstance)
            .map(SessionEvent.Released.class::cast)
            .findFirst()
            .orElseThrow();
    assertThat(r.facts().run().permit()).isTrue();
    assertThat(r.facts().run().admittedAtNanos()).isEqualTo(admittedAt);
    assertThat(r.facts().end().firstChunkNanos()).isEqualTo(150 * MS);
    assertThat(r.heldNanos()).isEqualTo(550 * MS);
    assertThat(r.usage().outputTokens()).isEqualTo(5);
    // from the first chunk to the end over the tokens after the first: 400 ms / 4
    assertThat(AdaptiveSignals.tpot(r.heldNanos(), r.facts().end().firstChunkNanos(), 5))
        .isEqualTo(100.0 * MS);
  }

  @Test
  void withoutAFirstChunkOrWithOneToken_theWholeTimeOverItsTokens() {
    assertThat(AdaptiveSignals.tpot(600 * MS, -1, 3)).isEqualTo(200.0 * MS);
    assertThat(AdaptiveSignals.tpot(600 * MS, 100 * MS, 1)).isEqualTo(600.0 * MS);
  }
}
