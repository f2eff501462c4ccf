package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.PoolState;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.estimate.TokenEstimate;
import io.sluice.core.policy.PoolPolicy;
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
import java.util.Objects;
import org.junit.jupiter.api.Test;

/**
 * A streamed answer that runs past its output reserve, driven through {@link AdmissionSession} on a
 * fake ticker: its work in flight grows ({@code Permit.grow}), the pool reports the overrun ({@link
 * PoolState#overrunWork}), the growth stops at what the class can hold, the release gives all of it
 * back, and nothing grows after the release.
 */
class AdmissionSessionOverrunTest {
  private static final long T0 = 1_800_000_000_000L;

  /** 1,000 work units, one unit per input or output token, four requests. */
  private static final PoolPolicy SMALL = OneSlotPool.pool(1_000, 4);

  private final FakeTicker ticker = new FakeTicker();
  private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0), ZoneOffset.UTC);
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final AdmissionController controller = OneSlotPool.controller(SMALL);
  private final List<SessionEvent> events = new ArrayList<>();
  private final Sessions sessions =
      OneSlotPool.sessions(
          controller, quotas, ticker, clock, new AdmissionSessionTest.ManualTimer(), events::add);
  private final Tenant tenant =
      new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 1_000_000, 1_000_000));

  private AdmissionSession admitted() {
    AdmissionSessionTest.Front front = new AdmissionSessionTest.Front();
    long now = ticker.nanos();
    Subject subject =
        new Subject(
            "chat",
            SMALL,
            OneSlotPool.INTERACTIVE,
            RequestFormat.OPENAI_CHAT,
            tenant,
            now,
            now + Duration.ofSeconds(30).toNanos(),
            null,
            Duration.ofSeconds(5).toNanos(),
            false,
            0,
            null,
            io.sluice.core.session.Signals.NONE);
    AdmissionSession s = sessions.open(subject, front, Runnable::run, SessionSteps.NONE);
    byte[] body =
        ("{\"model\":\"gpt-4o\",\"max_tokens\":100,\"stream\":true,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"Say hello.\"}]}")
            .getBytes(StandardCharsets.UTF_8);
    s.begin(false, false, -1, ticker.nanos());
    s.decideWithBody(body, 0, body.length, ticker.nanos());
    assertThat(front.calls).containsExactly("admitted(body)");
    s.running().headers(200, "text/event-stream", true);
    return s;
  }

  /** {@code n} OpenAI chat chunks of one {@code " hello"} each (one o200k token each). */
  private static byte[] deltas(int n) {
    String one =
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\","
            + "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" hello\"},"
            + "\"finish_reason\":null}]}\n\n";
    return one.repeat(n).getBytes(StandardCharsets.UTF_8);
  }

  private static void stream(AdmissionSession s, byte[] chunk) {
    s.running().body(chunk, 0, chunk.length, false);
  }

  private PoolState pool() {
    return Objects.requireNonNull(controller.pool("gpu"));
  }

  private PoolState.Snapshot poolNow() {
    return pool().snapshot(ticker.nanos());
  }

  private List<SessionEvent.OutputOverran> overruns() {
    return events.stream()
        .filter(SessionEvent.OutputOverran.class::isInstance)
        .map(SessionEvent.OutputOverran.class::cast)
        .toList();
  }

  @Test
  void streamPastReserve_growsWorkInFlight_overrunReported_releaseReturnsAll() {
    AdmissionSession s = admitted();
    TokenEstimate e = Objects.requireNonNull(s.estimate());
    assertThat(e.outputReserveTokens()).isEqualTo(100);
    long admitted = SMALL.workUnits(e.inputTokens(), 100);
    assertThat(s.workUnits()).isEqualTo(admitted);
    assertThat(poolNow().workInFlight()).isEqualTo(admitted);

    stream(s, deltas(60)); // within the reserve: nothing grows
    assertThat(poolNow().workInFlight()).isEqualTo(admitted);
    assertThat(pool().overrunWork()).isZero();
    assertThat(s.facts().end().overran()).isFalse();
    assertThat(s.running().outputCharge()).isEqualTo(100);
    assertThat(overruns()).isEmpty();

    stream(s, deltas(60)); // 120 produced > 100: counted as 120 + a quarter = 150
    long grown = SMALL.workUnits(e.inputTokens(), 150) - admitted;
    assertThat(grown).isEqualTo(50);
    assertThat(s.facts().end().overran()).isTrue();
    assertThat(s.running().outputCharge()).isEqualTo(150);
    assertThat(pool().overrunWork()).isEqualTo(grown);
    assertThat(poolNow().workInFlight()).isEqualTo(admitted + grown);
    assertThat(overruns())
        .singleElement()
        .satisfies(
            o -> {
              assertThat(o.first()).isTrue();
              assertThat(o.addedWork()).isEqualTo(grown);
              assertThat(o.producedTokens()).isEqualTo(120);
            });

    stream(s, deltas(20)); // 140 produced: still within what it counts (150)
    assertThat(pool().overrunWork()).isEqualTo(grown);
    assertThat(overruns()).hasSize(1);

    stream(s, deltas(20)); // 160 produced: 160 + 40 = 200
    long grownAgain = SMALL.workUnits(e.inputTokens(), 200) - admitted;
    assertThat(pool().overrunWork()).isEqualTo(grownAgain);
    assertThat(poolNow().workInFlight()).isEqualTo(admitted + grownAgain);
    assertThat(overruns()).hasSize(2);
    assertThat(overruns().get(1).first()).isFalse();
    assertThat(overruns().get(1).addedWork()).isEqualTo(grownAgain - grown);

    assertThat(s.release(Outcome.CANCELLED)).isTrue();
    assertThat(poolNow().workInFlight()).isZero();
    assertThat(poolNow().requestsInFlight()).isZero();
    assertThat(pool().overrunWork()).isZero();
    assertThat(s.facts().end().charge().rule()).isEqualTo(Charge.STREAMED);
    assertThat(s.facts().end().charge().outputTokens()).isEqualTo(160);
    assertThat(s.facts().end().charge().meteredOutputTokens()).isEqualTo(160);

    // a chunk after the release (Envoy pipelined it) grows nothing
    stream(s, deltas(200));
    assertThat(poolNow().workInFlight()).isZero();
    assertThat(pool().overrunWork()).isZero();
    assertThat(overruns()).hasSize(2);
    assertThat(s.release(Outcome.COMPLETED)).as("released once").isFalse();
  }

  @Test
  void growthStopsAtWhatTheClassCanHold() {
    AdmissionSession s = admitted();
    long admitted = s.workUnits();
    AdmissionSession other = admitted(); // a second request holds its own work
    long both = admitted + other.workUnits();
    assertThat(poolNow().workInFlight()).isEqualTo(both);

    stream(s, deltas(1_500)); // asks for 1,500 + 375 output tokens: far past the pool
    long reach = SMALL.capacityWorkUnits(); // the only class may hold the whole pool
    long grown = pool().overrunWork();
    assertThat(admitted + grown)
        .as("the request grows to what its class can hold, no further")
        .isEqualTo(reach);
    assertThat(poolNow().workInFlight()).isEqualTo(reach + other.workUnits());
    assertThat(overruns())
        .singleElement()
        .satisfies(o -> assertThat(o.addedWork()).isEqualTo(grown));

    stream(s, deltas(1_000)); // more: nothing past the reach
    assertThat(pool().overrunWork()).isEqualTo(grown);
    assertThat(overruns()).hasSize(2);
    assertThat(overruns().get(1).addedWork()).isZero();

    s.end(Outcome.CANCELLED);
    assertThat(poolNow().workInFlight()).isEqualTo(other.workUnits());
    assertThat(pool().overrunWork()).isZero();
    other.end(Outcome.CANCELLED);
    assertThat(poolNow().workInFlight()).isZero();
    assertThat(poolNow().requestsInFlight()).isZero();
  }
}
