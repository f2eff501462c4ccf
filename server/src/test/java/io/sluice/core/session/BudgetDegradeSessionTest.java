package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.Outcome;
import io.sluice.core.admission.PoolState;
import io.sluice.core.budget.Budget;
import io.sluice.core.budget.BudgetBook;
import io.sluice.core.budget.BudgetCheck;
import io.sluice.core.budget.BudgetEvents;
import io.sluice.core.budget.BudgetNote;
import io.sluice.core.budget.BudgetPolicy;
import io.sluice.core.budget.BudgetSettler;
import io.sluice.core.budget.LastRemaining;
import io.sluice.core.budget.Price;
import io.sluice.core.budget.Prices;
import io.sluice.core.budget.Terms;
import io.sluice.core.budget.TestBudgets;
import io.sluice.core.budget.TokenUse;
import io.sluice.core.budget.WriteBack;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.DegradePolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryBudgetStore;
import io.sluice.store.memory.InMemoryStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The budget degrade rung ({@code budgets.degradeAt}, {@code budgets.degradeRung}): a request whose
 * reservation leaves its budget past the level asks its class's degrade ladder, through its note
 * ({@link Planner.Trigger}), to run it a cheaper way before the pool decides; the ladder's concise
 * rung admits it with trigger {@code budget}. Below the level, or with no such rung, it runs as
 * asked. An idle pool: the ladder's own triggers (wait, headroom) never fire here.
 */
class BudgetDegradeSessionTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final FakeTicker ticker = new FakeTicker();
  private final MutableClock clock = new MutableClock(Instant.parse("2026-12-05T10:00:00Z"));
  private final TenantQuotas quotas =
      new TenantQuotas(
          new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT),
          "test_",
          TenantQuotas.FailureMode.OPEN);
  private final List<SessionEvent> events = new ArrayList<>();
  private final Tenant acme = new Tenant("acme", TierPolicy.defaults("pro"));

  private static final ClassPolicy CONCISE =
      OneSlotPool.INTERACTIVE.withDegrade(
          new DegradePolicy(
              Duration.ofSeconds(30),
              0,
              List.of(new DegradePolicy.Concise(20, "Be brief.", null))));

  private InMemoryBudgetStore store = new InMemoryBudgetStore(1000);

  private Sessions sessions(long limit, BudgetPolicy.Degrade degrade) {
    return sessions(TestBudgets.dailyPro(limit, degrade), CONCISE, List.of(OneSlotPool.POOL));
  }

  private Sessions sessions(BudgetPolicy p, ClassPolicy cls, List<PoolPolicy> pools) {
    store = new InMemoryBudgetStore(1000);
    BudgetBook book =
        new BudgetBook(
            p,
            store,
            null,
            0.1,
            "t_",
            BudgetBook.FailureMode.OPEN,
            ms -> CompletableFuture.completedFuture(null),
            clock,
            BudgetEvents.NONE,
            new WriteBack(p.maxEntries(), BudgetEvents.NONE),
            new LastRemaining(p.maxEntries()));
    AdmissionController controller =
        new AdmissionController(
            pools, List.of(cls), Duration.ofSeconds(10), PoolState.ReleaseListener.NONE, () -> 0.5);
    return OneSlotPool.sessionsBuilder(
            controller,
            quotas,
            ticker,
            clock,
            new AdmissionSessionTest.ManualTimer(),
            SessionListener.of(events::add, new BudgetSettler(book)))
        .check(BudgetCheck.ORDER, BudgetCheck.factory(book))
        .build();
  }

  private AdmissionSession decide(Sessions on) {
    return decide(on, CONCISE);
  }

  private AdmissionSession decide(Sessions on, ClassPolicy cls) {
    long now = ticker.nanos();
    Subject base = OneSlotPool.chat(acme, now, null, Duration.ofSeconds(5).toNanos());
    Subject s =
        new Subject(
            base.route(),
            base.pool(),
            cls,
            base.format(),
            acme,
            now,
            base.deadlineNanos(),
            null,
            base.maxHoldNanos(),
            false,
            0,
            null,
            Signals.NONE);
    AdmissionSession session =
        on.open(s, new AdmissionSessionTest.Front(), Runnable::run, SessionSteps.NONE);
    byte[] body =
        "{\"model\":\"m\",\"max_tokens\":900,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
            .getBytes(StandardCharsets.UTF_8);
    session.begin(false, false, -1, ticker.nanos());
    session.decideWithBody(body, 0, body.length, ticker.nanos());
    return session;
  }

  private List<String> degraded() {
    return events.stream()
        .filter(SessionEvent.Degraded.class::isInstance)
        .map(e -> ((SessionEvent.Degraded) e).rung() + ":" + ((SessionEvent.Degraded) e).trigger())
        .toList();
  }

  @Test
  void pastDegradeAt_runsTheConciseRung_triggerBudget_belowIt_asAsked() throws Exception {
    BudgetPolicy.Degrade at = new BudgetPolicy.Degrade(0.5, "concise");
    AdmissionSession plenty = decide(sessions(10_000_000, at));
    long units = plenty.facts().note(BudgetNote.class).reserved().get(0).units();
    assertThat(plenty.running().plan().rung()).as("far from the level: as asked").isNull();
    assertThat(plenty.facts().note(BudgetNote.class).degradeTrigger()).isNull();
    plenty.release(Outcome.COMPLETED);
    plenty.end(Outcome.COMPLETED);

    // one reservation leaves 2/3 of the limit used: past 0.5
    AdmissionSession near = decide(sessions(units + units / 2, at));
    assertThat(near.facts().note(BudgetNote.class).degradeTrigger()).isEqualTo("budget");
    assertThat(near.running().plan().rung()).isEqualTo("concise");
    assertThat(near.running().plan().trigger()).isEqualTo("budget");
    assertThat(JSON.readTree(near.running().plan().body()).path("max_tokens").asLong())
        .isEqualTo(20);
    assertThat(degraded()).containsExactly("concise:budget");
    near.release(Outcome.COMPLETED);
    near.end(Outcome.COMPLETED);
  }

  /** The budget's state now: {spent, reserved}. */
  private long[] budget() {
    var st =
        store
            .read(
                "t_budget:{tenant:acme:daily}",
                TestBudgets.DAY,
                new Terms(1, List.of(), 0),
                clock.instant())
            .toCompletableFuture()
            .join();
    return new long[] {st.spent(), st.reserved()};
  }

  @Test
  void degraded_theReservationIsCutToTheCheaperRunsSize_atOnce_once() {
    BudgetPolicy.Degrade at = new BudgetPolicy.Degrade(0.5, "concise");
    AdmissionSession probe = decide(sessions(10_000_000, at));
    BudgetNote asked = probe.facts().note(BudgetNote.class);
    long units = asked.reserved().get(0).units();
    assertThat(budget()).as("as asked: nothing cut").containsExactly(0, units);
    assertThat(asked.shrunk()).isFalse();
    probe.release(Outcome.COMPLETED);
    probe.end(Outcome.COMPLETED);

    AdmissionSession near = decide(sessions(units + units / 2, at));
    assertThat(near.running().plan().rung()).isEqualTo("concise");
    BudgetNote note = near.facts().note(BudgetNote.class);
    long input = near.facts().estimate().tokens().inputTokens();
    // the concise rung caps the answer at 20 tokens: the reservation is now its input and 20
    assertThat(note.reserved().get(0).units()).as("reserved as asked").isEqualTo(units);
    assertThat(note.shrunk()).isTrue();
    assertThat(budget()).containsExactly(0, input + 20);
    near.release(Outcome.COMPLETED);
    near.end(Outcome.COMPLETED);
    assertThat(budget()[1]).as("settled by id: what the id held taken back").isZero();
  }

  @Test
  void degradeOff_orNoSuchRung_runsAsAsked() {
    AdmissionSession probe = decide(sessions(10_000_000, BudgetPolicy.Degrade.OFF));
    long units = probe.facts().note(BudgetNote.class).reserved().get(0).units();
    probe.release(Outcome.COMPLETED);
    probe.end(Outcome.COMPLETED);
    AdmissionSession off = decide(sessions(units + units / 2, BudgetPolicy.Degrade.OFF));
    assertThat(off.running().plan().rung()).isNull();
    off.release(Outcome.COMPLETED);
    off.end(Outcome.COMPLETED);
    BudgetPolicy.Degrade other = new BudgetPolicy.Degrade(0.5, "small-model");
    AdmissionSession none = decide(sessions(units + units / 2, other));
    assertThat(none.facts().note(BudgetNote.class).degradeTrigger()).isEqualTo("budget");
    assertThat(none.running().plan().rung()).as("the class has no rung of that name").isNull();
    assertThat(degraded()).isEmpty();
  }

  // prices per 1M tokens in nano-units: m at 3 / 15, mini at 0.15 / 0.60, the default at 1 / 4
  private static final Price M = new Price(Instant.EPOCH, 3_000_000_000L, 15_000_000_000L, 0);
  private static final Price MINI = new Price(Instant.EPOCH, 150_000_000L, 600_000_000L, 0);
  private static final Price DEFAULT = new Price(Instant.EPOCH, 1_000_000_000L, 4_000_000_000L, 0);

  /** Pool {@code small}, the reroute rung's: room for two. */
  private static final PoolPolicy SMALL =
      PoolPolicy.builder("small", 100_000)
          .maxRequests(2)
          .retryAfterJitter(0.0)
          .defaultServiceTime(Duration.ofSeconds(1))
          .build();

  private static ClassPolicy rerouteTo(String model) {
    return OneSlotPool.INTERACTIVE.withDegrade(
        new DegradePolicy(
            Duration.ofSeconds(30),
            0,
            List.of(new DegradePolicy.Reroute("small", null, null, model))));
  }

  /** A money budget of {@code limit} nano-units a day; m and mini priced; the reroute rung. */
  private Sessions money(long limit, String rerouteModel, Prices.Unknown unknown) {
    Prices prices = new Prices(Map.of("m", List.of(M), "mini", List.of(MINI)), DEFAULT, unknown);
    BudgetPolicy p =
        TestBudgets.dailyPro(
            Budget.Meter.MONEY, limit, prices, new BudgetPolicy.Degrade(0.5, "reroute"));
    return sessions(p, rerouteTo(rerouteModel), List.of(OneSlotPool.POOL, SMALL));
  }

  /**
   * A request rerouted to model {@code to} on a money budget past its degrade level: the ladder's
   * reroute rung runs it; answers its note (the price it ran at) and the budget's {spent, reserved}
   * while it runs and after its end, with what it was charged.
   */
  private record Rerouted(
      BudgetNote note, TokenUse runs, long[] running, long[] after, TokenUse charged) {}

  private Rerouted reroute(String to, Prices.Unknown unknown) {
    AdmissionSession probe = decide(money(1_000_000_000_000L, to, unknown), rerouteTo(to));
    long units = probe.facts().note(BudgetNote.class).reserved().get(0).units();
    assertThat(probe.running().plan().rung()).as("far from the level: as asked").isNull();
    probe.release(Outcome.COMPLETED);
    probe.end(Outcome.COMPLETED);

    AdmissionSession near = decide(money(units + units / 2, to, unknown), rerouteTo(to));
    assertThat(near.running().plan().rung()).isEqualTo("reroute");
    assertThat(near.running().plan().pool().name()).isEqualTo("small");
    BudgetNote note = near.facts().note(BudgetNote.class);
    assertThat(note.reserved().get(0).units()).as("reserved at m's price").isEqualTo(units);
    var est = near.facts().estimate().tokens();
    assertThat(est.model()).as("the estimate names the rung's model").isEqualTo(to);
    TokenUse runs = new TokenUse(est.inputTokens(), est.outputReserveTokens(), 0);
    long[] running = budget();
    near.release(Outcome.COMPLETED);
    near.end(Outcome.COMPLETED);
    var c = near.facts().end().charge();
    return new Rerouted(
        note,
        runs,
        running,
        budget(),
        new TokenUse(c.inputTokens(), c.outputTokens(), c.cachedInputTokens()));
  }

  @Test
  void reroutedToAPricedModel_reservedAndChargedAtItsPrice() {
    Rerouted r = reroute("mini", Prices.Unknown.REFUSE);
    assertThat(r.note().price()).as("the rung's model's price").isEqualTo(MINI);
    assertThat(r.running())
        .as("the reservation cut to mini's price of the same tokens, at once")
        .containsExactly(0, MINI.cost(r.runs()));
    assertThat(r.after()).as("charged at mini's price").containsExactly(MINI.cost(r.charged()), 0);
    assertThat(MINI.cost(r.charged())).isPositive().isLessThan(M.cost(r.charged()));
  }

  @Test
  void reroutedToAnUnpricedModel_followsUnknownModel_defaultPriceOrTheAskedOnes() {
    Rerouted byDefault = reroute("unlisted", Prices.Unknown.DEFAULT);
    assertThat(byDefault.note().price()).as("unknownModel: default").isEqualTo(DEFAULT);
    assertThat(byDefault.after()).containsExactly(DEFAULT.cost(byDefault.charged()), 0);

    Rerouted refused = reroute("unlisted", Prices.Unknown.REFUSE);
    // admitted already: money cannot be counted at the unknown model's price, so the price it
    // was admitted at (the asked model's) stays, and nothing is cut
    assertThat(refused.note().price()).as("unknownModel: refuse").isEqualTo(M);
    assertThat(refused.running()).containsExactly(0, refused.note().reserved().get(0).units());
    assertThat(refused.after()).containsExactly(M.cost(refused.charged()), 0);
  }
}
